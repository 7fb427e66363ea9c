package mocks_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/steadyllm/steady/mocks"
)

func TestJournal_RecordsRequestsWithSecretsRedacted(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Status(503)))
	hdr := openAIHeaders()
	hdr["X-Stainless-Retry-Count"] = "2"
	hdr["Api-Key"] = "azure-secret"
	hdr["X-Api-Key"] = "anthropic-secret"
	before := time.Now()
	mustDo(t, s, http.MethodPost, "/v1/chat/completions?trace=1", hdr, chatBody)
	mustDo(t, s, http.MethodGet, "/v1/models", openAIHeaders(), "")
	reqs := s.Journal().Requests()
	if len(reqs) != 2 || s.Journal().Len() != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Seq != 1 || r.Method != "POST" || r.Path != "/v1/chat/completions" || r.Query != "trace=1" || string(r.Body) != chatBody {
		t.Errorf("request = %+v", r)
	}
	for _, h := range []string{"Authorization", "Api-Key", "X-Api-Key"} {
		if got := r.Header.Get(h); got != "REDACTED" {
			t.Errorf("%s = %q", h, got)
		}
	}
	if n, ok := r.RetryCount(); !ok || n != 2 {
		t.Errorf("RetryCount = %d, %t", n, ok)
	}
	if _, ok := reqs[1].RetryCount(); ok {
		t.Error("RetryCount present without the header")
	}
	if r.Step != "503" || reqs[1].Step != "ok" {
		t.Errorf("steps %q, %q", r.Step, reqs[1].Step)
	}
	if r.Arrived.Before(before) || reqs[1].Arrived.Before(r.Arrived) {
		t.Errorf("arrival times out of order")
	}
	if iv := s.Journal().Intervals(); len(iv) != 1 || iv[0] < 0 {
		t.Errorf("intervals %v", iv)
	}
	// Copies: changing them does not change the journal.
	reqs[0].Header.Set("Authorization", "x")
	reqs[0].Body[0] = 'X'
	if again := s.Journal().Requests()[0]; again.Header.Get("Authorization") != "REDACTED" || again.Body[0] != '{' {
		t.Error("Requests returned shared memory")
	}
	s.Journal().Reset()
	if _, ok := s.Journal().Last(); ok {
		t.Error("Reset kept requests")
	}
}

func TestJournal_RejectedCallsAreRecordedToo(t *testing.T) {
	s := newServer(t)
	mustDo(t, s, http.MethodPost, "/v1/messages", map[string]string{"Anthropic-Version": "2023-06-01"}, messagesBody)
	if r, _ := s.Journal().Last(); r.Step != "401 auth" {
		t.Errorf("step %q", r.Step)
	}
}

func TestJournal_MaxConcurrency(t *testing.T) {
	const n = 5
	s := newServer(t, mocks.WithScript(mocks.Stall().Times(n)))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if res, err := do(t, ctx, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatBody); err == nil {
				res.Body.Close()
			}
		}()
	}
	if err := s.Journal().Wait(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	// Every request has arrived and stalls, so all n are in flight at once.
	if got := s.Journal().MaxConcurrency(); got != n {
		t.Errorf("MaxConcurrency = %d, want %d", got, n)
	}
	cancel()
	wg.Wait()
	waitIdle(t, s)
	if got := s.Journal().MaxConcurrency(); got != n {
		t.Errorf("after: MaxConcurrency = %d", got)
	}
}

func TestJournal_WaitHonoursContext(t *testing.T) {
	s := newServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Journal().Wait(ctx, 1); err != context.Canceled {
		t.Errorf("err = %v", err)
	}
}
