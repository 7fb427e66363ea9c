package anthropic_test

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// secretKey is the sentinel API key: no error, no printed Config may ever contain it.
const secretKey = "sk-ant-SENTINEL-7f3c9a"

const model = "claude-haiku-4-5"

// recorder is a RoundTripper that remembers every request it sent and whether each response
// body was closed.
type recorder struct {
	next http.RoundTripper

	mu     sync.Mutex
	reqs   []*http.Request
	bodies []*closeRecorder
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	cr := &closeRecorder{ReadCloser: resp.Body}
	resp.Body = cr
	r.mu.Lock()
	r.bodies = append(r.bodies, cr)
	r.mu.Unlock()
	return resp, nil
}

// requests returns the requests sent so far.
func (r *recorder) requests() []*http.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*http.Request(nil), r.reqs...)
}

// checkClosed fails the test when a response body was left open.
func (r *recorder) checkClosed(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bodies) == 0 {
		t.Error("no response was received")
	}
	for i, b := range r.bodies {
		if !b.isClosed() {
			t.Errorf("response body %d was not closed", i+1)
		}
	}
}

// closeRecorder records Close on a response body.
type closeRecorder struct {
	io.ReadCloser
	mu     sync.Mutex
	closed bool
}

func (c *closeRecorder) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return c.ReadCloser.Close()
}

func (c *closeRecorder) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// fixture is a fake server and a provider talking to it through a recorder. At the end of
// the test it checks that every response body was closed.
type fixture struct {
	s   *mocks.Server
	p   *anthropic.Provider
	rec *recorder
}

func newFixture(t *testing.T, opts ...mocks.Option) *fixture {
	t.Helper()
	return newFixtureWith(t, nil, opts...)
}

// newFixtureWith is newFixture with a hook to change the provider's Config.
func newFixtureWith(t *testing.T, edit func(*anthropic.Config), opts ...mocks.Option) *fixture {
	t.Helper()
	s := mocks.NewServer(append([]mocks.Option{mocks.WithAPIKey(secretKey)}, opts...)...)
	rec := &recorder{next: s.Client().Transport}
	cfg := anthropic.Config{
		BaseURL:    s.AnthropicBaseURL(),
		APIKey:     secretKey,
		Model:      model,
		HTTPClient: &http.Client{Transport: rec},
	}
	if edit != nil {
		edit(&cfg)
	}
	p, err := anthropic.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rec.checkClosed(t)
		s.Close()
	})
	return &fixture{s: s, p: p, rec: rec}
}

// newProvider returns a provider for baseURL over http.DefaultClient, for tests that send
// nothing or whose server is not the fake.
func newProvider(t *testing.T, baseURL, model string) *anthropic.Provider {
	t.Helper()
	p, err := anthropic.New(anthropic.Config{BaseURL: baseURL, APIKey: secretKey, Model: model})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// newProviderVia returns a provider for baseURL whose requests go through rt.
func newProviderVia(t *testing.T, baseURL string, rt http.RoundTripper) *anthropic.Provider {
	t.Helper()
	p, err := anthropic.New(anthropic.Config{BaseURL: baseURL, APIKey: secretKey, Model: model,
		HTTPClient: &http.Client{Transport: rt}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// userRequest is a one-turn request.
func userRequest(text string) *providers.ChatRequest {
	return &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: text}}}
}

// collect reads a stream to its end and returns its deltas and the error that ended it
// (nil after a clean io.EOF). It closes the stream.
func collect(t *testing.T, st providers.Stream) ([]providers.Delta, error) {
	t.Helper()
	defer func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	var out []providers.Delta
	for {
		d, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, d)
		if len(out) > 10000 {
			t.Fatal("the stream does not end")
		}
	}
}

// asError returns err as a *providers.Error or fails the test.
func asError(t *testing.T, err error) *providers.Error {
	t.Helper()
	var e *providers.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *providers.Error", err, err)
	}
	return e
}
