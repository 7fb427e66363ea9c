package mocks_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
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

// send posts chatBody, padded with spaces to size bytes when size is larger, with ?n=i.
func send(t *testing.T, s *mocks.Server, i, size int) {
	t.Helper()
	body := chatBody
	if size > len(body) {
		body += strings.Repeat(" ", size-len(body))
	}
	if res, b := mustDo(t, s, http.MethodPost, fmt.Sprintf("/v1/chat/completions?n=%d", i), openAIHeaders(), body); res.StatusCode != http.StatusOK {
		t.Fatalf("request %d: status %d: %s", i, res.StatusCode, b)
	}
}

func TestJournal_DropsOldestBeyondMaxEntries(t *testing.T) {
	s := newServer(t, mocks.WithJournalLimits(mocks.JournalLimits{MaxEntries: 3}))
	for i := 1; i <= 5; i++ {
		send(t, s, i, 0)
	}
	j := s.Journal()
	reqs := j.Requests()
	if len(reqs) != 3 {
		t.Fatalf("kept %d requests, want 3", len(reqs))
	}
	for k, r := range reqs {
		if want := k + 3; r.Seq != want || r.Query != fmt.Sprintf("n=%d", want) {
			t.Errorf("kept[%d]: Seq %d, query %q; want the newest three, 3 to 5", k, r.Seq, r.Query)
		}
	}
	if last, ok := j.Last(); !ok || last.Seq != 5 {
		t.Errorf("Last = %d, %t", last.Seq, ok)
	}
	if got := len(j.Intervals()); got != 2 {
		t.Errorf("%d intervals between the kept requests, want 2", got)
	}
	st := j.Stats()
	if j.Len() != 5 || st.Received != 5 || st.Kept != 3 || st.Dropped != 2 || st.TruncatedBodies != 0 {
		t.Errorf("Len %d, stats %+v; want 5 received, 3 kept, 2 dropped", j.Len(), st)
	}
	if err := j.Wait(context.Background(), 5); err != nil { // counts dropped requests too
		t.Errorf("Wait(5): %v", err)
	}
	j.Reset()
	if st := j.Stats(); st != (mocks.JournalStats{}) || j.Len() != 0 {
		t.Errorf("after Reset: %+v", st)
	}
	send(t, s, 6, 0)
	if r, _ := j.Last(); r.Seq != 1 {
		t.Errorf("after Reset the first request has Seq %d", r.Seq)
	}
}

func TestJournal_TruncatesBodiesBeyondMaxBodyBytes(t *testing.T) {
	s := newServer(t, mocks.WithJournalLimits(mocks.JournalLimits{MaxBodyBytes: 16}))
	_, b := mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatBody)
	if got := path(decode(t, b), "choices", 0, "message", "content"); got != "Say hello to the fake server" {
		t.Errorf("the server answered %v: it must read the whole body, whatever the journal keeps", got)
	}
	mustDo(t, s, http.MethodPost, "/v1/embeddings", openAIHeaders(), `{"input":"x"}`) // 13 bytes
	reqs := s.Journal().Requests()
	if r := reqs[0]; string(r.Body) != chatBody[:16] || !r.BodyTruncated || r.BodyLen != len(chatBody) {
		t.Errorf("long body: %q truncated=%t len=%d", r.Body, r.BodyTruncated, r.BodyLen)
	}
	if r := reqs[1]; string(r.Body) != `{"input":"x"}` || r.BodyTruncated || r.BodyLen != 13 {
		t.Errorf("short body: %q truncated=%t len=%d", r.Body, r.BodyTruncated, r.BodyLen)
	}
	if st := s.Journal().Stats(); st.TruncatedBodies != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestJournal_KeepsBodiesUpToOneMiBByDefault(t *testing.T) {
	s := newServer(t)
	send(t, s, 1, mocks.DefaultJournalBodyBytes)
	send(t, s, 2, mocks.DefaultJournalBodyBytes+1)
	reqs := s.Journal().Requests()
	if len(reqs[0].Body) != mocks.DefaultJournalBodyBytes || reqs[0].BodyTruncated {
		t.Errorf("a body of exactly the limit: %d bytes kept, truncated=%t", len(reqs[0].Body), reqs[0].BodyTruncated)
	}
	if len(reqs[1].Body) != mocks.DefaultJournalBodyBytes || !reqs[1].BodyTruncated || reqs[1].BodyLen != mocks.DefaultJournalBodyBytes+1 {
		t.Errorf("a body one byte over: %d of %d bytes kept, truncated=%t", len(reqs[1].Body), reqs[1].BodyLen, reqs[1].BodyTruncated)
	}
}

func TestJournal_DropsOldestBeyondMaxTotalBytes(t *testing.T) {
	const size, total = 10 << 10, 25 << 10 // two 10 KiB requests fit, with their headers; three do not
	s := newServer(t, mocks.WithJournalLimits(mocks.JournalLimits{MaxTotalBytes: total}))
	for i := 1; i <= 4; i++ {
		send(t, s, i, size)
		if st := s.Journal().Stats(); st.KeptBytes > total {
			t.Fatalf("after %d requests: %d bytes kept, over the %d limit", i, st.KeptBytes, total)
		}
	}
	reqs := s.Journal().Requests()
	if len(reqs) != 2 || reqs[0].Seq != 3 || reqs[1].Seq != 4 {
		t.Fatalf("kept %d requests (first Seq %d); want the newest two", len(reqs), reqs[0].Seq)
	}
	if st := s.Journal().Stats(); st.Received != 4 || st.Dropped != 2 || st.KeptBytes < 2*size {
		t.Errorf("stats %+v", st)
	}
}

func TestJournal_NegativeLimitsKeepNothingButCount(t *testing.T) {
	for _, tc := range []struct {
		name     string
		limits   mocks.JournalLimits
		kept     int
		withBody bool
	}{
		{"no entries", mocks.JournalLimits{MaxEntries: -1}, 0, false},
		{"no bytes", mocks.JournalLimits{MaxTotalBytes: -1}, 0, false},
		{"no bodies", mocks.JournalLimits{MaxBodyBytes: -1}, 2, false},
		{"defaults", mocks.JournalLimits{}, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, mocks.WithJournalLimits(tc.limits))
			send(t, s, 1, 0)
			send(t, s, 2, 0)
			reqs := s.Journal().Requests()
			if len(reqs) != tc.kept || s.Journal().Len() != 2 {
				t.Fatalf("kept %d of %d; want %d of 2", len(reqs), s.Journal().Len(), tc.kept)
			}
			for _, r := range reqs {
				if (len(r.Body) > 0) != tc.withBody || r.BodyTruncated == tc.withBody || r.BodyLen != len(chatBody) {
					t.Errorf("body %q truncated=%t len=%d", r.Body, r.BodyTruncated, r.BodyLen)
				}
			}
			if _, ok := s.Journal().Last(); ok != (tc.kept > 0) {
				t.Errorf("Last found one: %t", ok)
			}
		})
	}
}

func TestJournal_MaxConcurrencyStaysExactWhenNothingIsKept(t *testing.T) {
	const n = 4
	s := newServer(t, mocks.WithScript(mocks.Stall().Times(n)), mocks.WithJournalLimits(mocks.JournalLimits{MaxEntries: -1}))
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
	if got := s.Journal().MaxConcurrency(); got != n {
		t.Errorf("MaxConcurrency = %d, want %d", got, n)
	}
	cancel()
	wg.Wait()
	waitIdle(t, s)
	if st := s.Journal().Stats(); st.Received != n || st.Kept != 0 || st.Dropped != n {
		t.Errorf("stats %+v", st)
	}
}

// heapInUse returns the live heap after a collection.
func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func TestJournal_MemoryStaysBoundedOverALongRunOfLargeBodies(t *testing.T) {
	const total = 1 << 20
	s := newServer(t, mocks.WithJournalLimits(mocks.JournalLimits{MaxTotalBytes: total}))
	send(t, s, 0, 512<<10) // warm up buffers and connections
	before := heapInUse()
	for i := 1; i <= 32; i++ { // 16 MiB of bodies
		send(t, s, i, 512<<10)
	}
	grew := int64(heapInUse()) - int64(before)
	st := s.Journal().Stats()
	t.Logf("32 bodies of 512 KiB: heap grew %d bytes; journal %+v", grew, st)
	if st.KeptBytes > total || st.Kept > 2 || st.Received != 33 {
		t.Errorf("journal %+v; want at most %d bytes kept", st, total)
	}
	if grew > 8<<20 {
		t.Errorf("the heap grew %d bytes over 16 MiB of bodies with a 1 MiB journal", grew)
	}
}

func TestConfig_JournalAndBodyLimitsFromAScenarioFile(t *testing.T) {
	cfg, err := mocks.ParseConfig([]byte(`{"maxBodyBytes": 1000, "journal": {"maxEntries": 2, "maxBodyBytes": 10, "maxTotalBytes": 100000}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(t, mocks.WithConfig(cfg))
	for i := 1; i <= 3; i++ {
		send(t, s, i, 0)
	}
	if res, _ := mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatBody+strings.Repeat(" ", 1000)); res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over the file's maxBodyBytes: status %d", res.StatusCode)
	}
	// Content-Length told the server the fourth body was too long: it read none of it.
	if st := s.Journal().Stats(); st.Kept != 2 || st.Received != 4 || st.TruncatedBodies != 3 {
		t.Errorf("stats %+v", st)
	}
	if r, _ := s.Journal().Last(); r.Step != "413 size" || r.BodyLen != 0 || len(r.Body) != 0 {
		t.Errorf("the 413: step %q, %d bytes read", r.Step, r.BodyLen)
	}
	for _, bad := range []string{`{"maxBodyBytes": -1}`, `{"journal": {"maxEntrys": 2}}`} {
		if _, err := mocks.ParseConfig([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// The journal counts the content events the server's streams wrote, for a client that cancels
// streams to measure what it was sent.
func TestJournal_CountsContentEvents(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("one two three"))
	defer s.Close()
	body := `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	for range 2 {
		req, _ := http.NewRequest(http.MethodPost, s.OpenAIBaseURL()+"/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer sk-test")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	if n := s.Journal().Stats().ContentEvents; n != 6 {
		t.Fatalf("%d content events, want 3 words twice", n)
	}
	s.Journal().Reset()
	if n := s.Journal().Stats().ContentEvents; n != 0 {
		t.Fatalf("%d content events after Reset", n)
	}
}
