package wire

import (
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// countingTransport counts the requests it sees.
type countingTransport struct {
	n    atomic.Int32
	base http.RoundTripper
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n.Add(1)
	return t.base.RoundTrip(r)
}

// A Sender never follows a redirect, whether it calls the transport directly (no jar, no
// timeout) or goes through the client (which it must, for the jar and the timeout).
func TestSender_NeverFollowsRedirects(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/stolen", http.StatusTemporaryRedirect)
	}))
	defer origin.Close()
	jar, _ := cookiejar.New(nil)
	for name, tc := range map[string]struct {
		hc     func(rt http.RoundTripper) *http.Client
		direct bool
	}{
		"plain client":     {func(rt http.RoundTripper) *http.Client { return &http.Client{Transport: rt} }, true},
		"client with jar":  {func(rt http.RoundTripper) *http.Client { return &http.Client{Transport: rt, Jar: jar} }, false},
		"client with time": {func(rt http.RoundTripper) *http.Client { return &http.Client{Transport: rt, Timeout: time.Minute} }, false},
	} {
		rt := &countingTransport{base: http.DefaultTransport}
		hc := tc.hc(rt)
		s := NewSender(hc)
		if got := s.rt != nil; got != tc.direct {
			t.Errorf("%s: direct = %v, want %v", name, got, tc.direct)
		}
		req, _ := http.NewRequest(http.MethodPost, origin.URL, nil)
		resp, err := s.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTemporaryRedirect || rt.n.Load() != 1 || elsewhere.Load() != 0 {
			t.Fatalf("%s: status %d after %d requests, %d elsewhere", name, resp.StatusCode, rt.n.Load(), elsewhere.Load())
		}
		if hc.CheckRedirect != nil {
			t.Errorf("%s: the given client was modified", name)
		}
	}
}

// nilTransport breaks the RoundTripper contract: no response and no error.
type nilTransport struct{}

func (nilTransport) RoundTrip(*http.Request) (*http.Response, error) { return nil, nil }

func TestSender_TransportWithoutAnswerIsAnError(t *testing.T) {
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/", nil)
	if resp, err := NewSender(&http.Client{Transport: nilTransport{}}).Do(req); err == nil || resp != nil {
		t.Fatalf("got %v, %v", resp, err)
	}
}
