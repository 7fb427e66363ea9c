package openai_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sentinel is the API key every test uses; it must never appear in an error or a log line.
const sentinel = "sk-SENTINEL-3f9c2b7e-do-not-print"

// newServer starts a fake server that insists on the sentinel key.
func newServer(t *testing.T, steps ...mocks.Step) *mocks.Server {
	t.Helper()
	s := mocks.NewServer(mocks.WithAPIKey(sentinel), mocks.WithScript(steps...))
	t.Cleanup(s.Close)
	return s
}

// newProvider builds an OpenAI-kind provider against s, adjusted by edit.
func newProvider(t *testing.T, s *mocks.Server, edit ...func(*openai.Config)) *openai.Provider {
	t.Helper()
	cfg := openai.Config{
		BaseURL:    s.OpenAIBaseURL(),
		APIKey:     sentinel,
		Model:      "gpt-4o-mini",
		HTTPClient: s.Client(),
	}
	for _, e := range edit {
		e(&cfg)
	}
	p, err := openai.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

// ask is a one-message chat request.
func ask(text string) *providers.ChatRequest {
	return &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: text}}}
}

// asError asserts err is a *providers.Error without the sentinel anywhere in its chain.
func asError(t *testing.T, err error) *providers.Error {
	t.Helper()
	var e *providers.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v is not a *providers.Error", err, err)
	}
	for x := err; x != nil; x = errors.Unwrap(x) {
		if strings.Contains(x.Error(), sentinel) {
			t.Fatalf("error %T leaks the API key: %v", x, x)
		}
	}
	return e
}

// lastBody returns the body of the last request the server received.
func lastBody(t *testing.T, s *mocks.Server) string {
	t.Helper()
	r, ok := s.Journal().Last()
	if !ok {
		t.Fatal("the server received no request")
	}
	return string(r.Body)
}

// drain reads st to the end and returns its deltas and final error (nil after Done + io.EOF).
func drain(t *testing.T, st providers.Stream) ([]providers.Delta, error) {
	t.Helper()
	defer st.Close()
	var out []providers.Delta
	for {
		d, err := st.Recv()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, d)
		if len(out) > 10000 {
			t.Fatal("stream does not end")
		}
	}
}

// closeRecorder is a RoundTripper that records whether each response body was closed.
type closeRecorder struct {
	base   http.RoundTripper
	mu     sync.Mutex
	bodies []*recordedBody
}

type recordedBody struct {
	io.ReadCloser
	mu     sync.Mutex
	closed bool
}

func (b *recordedBody) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return b.ReadCloser.Close()
}

func (r *closeRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b := &recordedBody{ReadCloser: resp.Body}
	resp.Body = b
	r.mu.Lock()
	r.bodies = append(r.bodies, b)
	r.mu.Unlock()
	return resp, nil
}

// allClosed reports how many bodies were seen and whether every one was closed.
func (r *closeRecorder) allClosed() (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.bodies {
		b.mu.Lock()
		closed := b.closed
		b.mu.Unlock()
		if !closed {
			return len(r.bodies), false
		}
	}
	return len(r.bodies), true
}

// roundTripFunc is a RoundTripper made of a function, for canned responses.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
