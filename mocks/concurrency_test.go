package mocks_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/mocks"
)

// holdOne sends a call that the server stalls on, so it stays in flight until the returned
// function ends it. Hold calls one after the other, and release them in reverse order.
func holdOne(t *testing.T, s *mocks.Server, path string, hdr map[string]string, body string) func() {
	t.Helper()
	before := s.Concurrency().InFlight
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if res, err := do(t, ctx, s, http.MethodPost, path, hdr, body); err == nil {
			res.Body.Close()
		}
	}()
	waitInFlight(t, s, before+1)
	return func() {
		cancel()
		<-done
		waitInFlight(t, s, before) // the server notices the client left on its own time
	}
}

// waitInFlight waits until the server has n calls in flight.
func waitInFlight(t *testing.T, s *mocks.Server, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.Concurrency().InFlight != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d in flight, want %d", s.Concurrency().InFlight, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestConcurrencyLimit_RefusesCallsAboveItAsEachAPISaysOverloaded(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		hdr        map[string]string
		body       string
		limit      mocks.ConcurrencyLimit
		status     int
		errType    string
	}{
		{"anthropic", "/v1/messages", anthropicHeaders(), messagesBody, mocks.ConcurrencyLimit{Max: 1}, 529, "overloaded_error"},
		{"openai", "/v1/chat/completions", openAIHeaders(), chatBody, mocks.ConcurrencyLimit{Max: 1}, 503, "server_error"},
		{"openai 529", "/v1/chat/completions", openAIHeaders(), chatBody, mocks.ConcurrencyLimit{Max: 1, OpenAIStatus: 529}, 529, ""},
		{"openai 429", "/v1/chat/completions", openAIHeaders(), chatBody, mocks.ConcurrencyLimit{Max: 1, OpenAIStatus: 429}, 429, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, mocks.WithConcurrencyLimit(tc.limit), mocks.WithScript(mocks.Stall()))
			release := holdOne(t, s, tc.path, tc.hdr, tc.body)
			res, b := mustDo(t, s, http.MethodPost, tc.path, tc.hdr, tc.body)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, b)
			}
			if tc.errType != "" && path(decode(t, b), "error", "type") != tc.errType {
				t.Fatalf("body %s, want error type %s", b, tc.errType)
			}
			if tc.name == "openai" && !strings.Contains(string(b), "overloaded") {
				t.Fatalf("body %s", b)
			}
			if tc.status == http.StatusTooManyRequests {
				// Too many at once, not a rate limit: no hint, and every budget shows room.
				if h := res.Header; h.Get("Retry-After") != "" || h.Get("Retry-After-Ms") != "" ||
					h.Get("X-Ratelimit-Remaining-Requests") == "0" || h.Get("X-Ratelimit-Remaining-Tokens") == "0" ||
					!strings.Contains(string(b), "concurrent") {
					t.Fatalf("429 over the concurrency limit: headers %v, body %s", h, b)
				}
			}
			release()
			// The refused call took no step of the script: the next is served.
			if res, b := mustDo(t, s, http.MethodPost, tc.path, tc.hdr, tc.body); res.StatusCode != 200 {
				t.Fatalf("after the held call ended: %d %s", res.StatusCode, b)
			}
			st := s.Concurrency()
			if st.Refused != 1 || st.Served != 2 || st.Peak != 1 || st.InFlight != 0 || st.Max != 1 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

func TestConcurrencyLimit_ChangesWhileTheServerRuns(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Stall(), mocks.Stall()))
	first := holdOne(t, s, "/v1/chat/completions", openAIHeaders(), chatBody)
	defer first()
	second := holdOne(t, s, "/v1/chat/completions", openAIHeaders(), chatBody) // no limit yet
	defer second()
	s.SetConcurrencyLimit(2)
	if res, _ := mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatBody); res.StatusCode != 503 {
		t.Fatalf("status %d with two in flight and a limit of 2", res.StatusCode)
	}
	s.SetConcurrencyLimit(3)
	if res, _ := mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatBody); res.StatusCode != 200 {
		t.Fatalf("status %d under a raised limit", res.StatusCode)
	}
	// Models are never counted.
	s.SetConcurrencyLimit(1)
	if res, _ := mustDo(t, s, http.MethodGet, "/v1/models", openAIHeaders(), ""); res.StatusCode != 200 {
		t.Fatalf("models: %d", res.StatusCode)
	}
	if st := s.Concurrency(); st.Max != 1 || st.InFlight != 2 || st.Refused != 1 {
		t.Fatalf("stats %+v", st)
	}
}
