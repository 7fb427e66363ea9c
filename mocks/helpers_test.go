package mocks_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/steadyllm/steady/mocks"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newServer starts a server closed at the end of the test.
func newServer(t *testing.T, opts ...mocks.Option) *mocks.Server {
	t.Helper()
	s := mocks.NewServer(opts...)
	t.Cleanup(s.Close)
	return s
}

// openAIHeaders and anthropicHeaders are what the official SDKs send.
func openAIHeaders() map[string]string {
	return map[string]string{"Authorization": "Bearer sk-test", "Content-Type": "application/json"}
}

func anthropicHeaders() map[string]string {
	return map[string]string{"X-Api-Key": "sk-ant-test", "Anthropic-Version": "2023-06-01",
		"Content-Type": "application/json"}
}

// do sends one request to s and returns the response; the test closes its body.
func do(t *testing.T, ctx context.Context, s *mocks.Server, method, path string, hdr map[string]string, body string) (*http.Response, error) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return s.Client().Do(req)
}

// mustDo is do for calls that must get a response; it reads and closes the body.
func mustDo(t *testing.T, s *mocks.Server, method, path string, hdr map[string]string, body string) (*http.Response, []byte) {
	t.Helper()
	res, err := do(t, context.Background(), s, method, path, hdr, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return res, b
}

// decode unmarshals b into a generic JSON object.
func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return v
}

// path walks a decoded JSON value by object keys and array indexes.
func path(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

// event is one server-sent event.
type event struct{ name, data string }

// readEvents parses an event stream until EOF or a read error, which it returns.
func readEvents(r io.Reader) ([]event, error) {
	var out []event
	var cur event
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data != "" || cur.name != "" {
				out = append(out, cur)
			}
			cur = event{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		}
	}
	return out, sc.Err()
}

// stream sends a streaming request and parses its events.
func stream(t *testing.T, s *mocks.Server, p string, hdr map[string]string, body string) (*http.Response, []event, error) {
	t.Helper()
	res, err := do(t, context.Background(), s, http.MethodPost, p, hdr, body)
	if err != nil {
		t.Fatalf("POST %s: %v", p, err)
	}
	defer res.Body.Close()
	evs, err := readEvents(res.Body)
	return res, evs, err
}

// readAllClose reads and closes a response body.
func readAllClose(res *http.Response) ([]byte, error) {
	defer res.Body.Close()
	return io.ReadAll(res.Body)
}
