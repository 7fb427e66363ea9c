package openai_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
)

// longAnswer is an answer of many deltas, each word one.
var longAnswer = strings.TrimSpace(strings.Repeat("every word of the answer arrives once and only once ", 6))

// resumedText reads a stream to its end: the text it delivered, and the Done delta.
func resumedText(t *testing.T, st providers.Stream) (string, providers.Delta, error) {
	t.Helper()
	ds, err := drain(t, st)
	var text strings.Builder
	var done providers.Delta
	for _, d := range ds {
		text.WriteString(d.Text)
		if d.Done {
			done = d
		}
	}
	return text.String(), done, err
}

// countEvents counts the events of the scripted answer to a background stream request, read
// raw from s.
func countEvents(t *testing.T, s *mocks.Server) int {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, s.OpenAIBaseURL()+"/responses",
		strings.NewReader(`{"model":"m","background":true,"stream":true,"input":"Tell me."}`))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", "Bearer "+sentinel)
	r.Header.Set("Content-Type", "application/json")
	resp, err := s.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "data: ")
}

// The goal of issue 26: a background stream cut at any point — the connection dropped, or the
// body ended cleanly before its terminal event — resumes after the last event it delivered and
// delivers the whole answer with no event lost and none twice. 1,000 random cut points (200
// with -short).
func TestResponses_CutBackgroundStreamResumesWithoutLossOrDuplicates(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 200
	}
	s := newServer(t)
	p := responsesProvider(t, s)
	req := ask("Tell me.")
	req.Background = true
	// The whole stream, uncut, gives its number of events.
	s.Script(mocks.Step{Text: longAnswer}.Always())
	total := countEvents(t, s)
	st, err := p.ChatStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if text, done, err := resumedText(t, st); err != nil || text != longAnswer || !done.Done || done.Stored == nil {
		t.Fatalf("uncut: %q %+v %v", text, done, err)
	}
	rng := rand.New(rand.NewPCG(26, 2))
	resumed := 0
	for i := range n {
		cut := mocks.CutAbort
		if i%2 == 1 {
			cut = mocks.CutClean
		}
		at := 1 + rng.IntN(total) // after the first event: the response has named its ID
		s.Script(mocks.Step{Text: longAnswer, Cut: cut, CutAfter: at})
		before := s.Journal().Len()
		st, err := p.ChatStream(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		text, done, err := resumedText(t, st)
		if err != nil || text != longAnswer || !done.Done || done.FinishReason != providers.FinishStop {
			t.Fatalf("cut %s after %d events: %q, %+v, %v", cut, at, text, done, err)
		}
		for _, r := range s.Journal().Requests()[before:] {
			if r.Method == http.MethodGet {
				resumed++
				if !strings.Contains(r.Path, "/v1/responses/resp_") {
					t.Fatalf("resumed at %s", r.Path)
				}
			}
		}
	}
	if resumed < n*9/10 {
		t.Fatalf("%d of %d streams resumed: the cuts did not cut", resumed, n)
	}
}

// A foreground stream is never resumed: it was not kept, so a cut fails as it always did.
func TestResponses_ForegroundStreamIsNotResumed(t *testing.T) {
	s := newServer(t, mocks.Step{Text: longAnswer, Cut: mocks.CutAbort, CutAfter: 5})
	st, err := responsesProvider(t, s).ChatStream(context.Background(), ask("Tell me."))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := resumedText(t, st); err == nil {
		t.Fatal("a cut foreground stream succeeded")
	}
	if n := s.Journal().Len(); n != 1 {
		t.Fatalf("%d requests", n)
	}
}

// sequenceServer serves a background stream whose events come out of order: the first
// connection sends events 0–2, repeats 2 and jumps to 4 (3 was lost); a read with
// starting_after serves every event after it. It records the starting_after values asked.
func sequenceServer(t *testing.T, words []string) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var asked []string
	event := func(seq int, typ, extra string) string {
		return fmt.Sprintf("event: %s\ndata: {\"type\":%q,\"sequence_number\":%d%s}\n\n", typ, typ, seq, extra)
	}
	all := []string{event(0, "response.created", `,"response":{"id":"resp_seq","object":"response","status":"queued"}`)}
	for i, w := range words {
		all = append(all, event(i+1, "response.output_text.delta", fmt.Sprintf(`,"output_index":0,"delta":%q`, w)))
	}
	all = append(all, event(len(words)+1, "response.completed", `,"response":{"id":"resp_seq","object":"response","status":"completed","output":[]}`))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		if r.Method == http.MethodPost {
			fmt.Fprint(w, all[0], all[1], all[2], all[2], all[4])
			return // ends without the terminal event
		}
		after := r.URL.Query().Get("starting_after")
		mu.Lock()
		asked = append(asked, after)
		mu.Unlock()
		var n int
		fmt.Sscan(after, &n)
		for _, e := range all[n+1:] {
			fmt.Fprint(w, e)
		}
	}))
	t.Cleanup(ts.Close)
	return ts, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), asked...) }
}

// A repeated event is skipped; a gap resumes from the last event delivered.
func TestResponses_BackgroundStreamSkipsRepeatsAndResumesAfterAGap(t *testing.T) {
	words := []string{"one ", "two ", "three ", "four ", "five"}
	ts, asked := sequenceServer(t, words)
	p, err := openai.New(openai.Config{API: openai.Responses, BaseURL: ts.URL, APIKey: sentinel, Model: "m", HTTPClient: ts.Client()})
	if err != nil {
		t.Fatal(err)
	}
	req := ask("count")
	req.Background = true
	st, err := p.ChatStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	text, done, err := resumedText(t, st)
	if err != nil || text != strings.Join(words, "") || !done.Done {
		t.Fatalf("%q %+v %v", text, done, err)
	}
	if got := asked(); strings.Join(got, ",") != "2" {
		t.Fatalf("resumed after %v, want after 2 (the last delivered before the gap)", got)
	}
}

// A background stream that is cut again and again is resumed a bounded number of times, each
// from where it stopped, and then fails with the text delivered so far; a resume the server
// refuses fails the stream with the server's error.
func TestResponses_BackgroundStreamResumesAreBounded(t *testing.T) {
	var mu sync.Mutex
	requests, missing := 0, false
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		n, gone := requests, missing
		mu.Unlock()
		if gone && r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":{"message":"No response found.","type":"invalid_request_error","code":null,"param":null}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if r.Method == http.MethodPost {
			fmt.Fprint(w, "data: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_cut\",\"object\":\"response\",\"status\":\"queued\"}}\n\n")
		}
		// One more word per connection, then the body ends before the terminal event.
		if want := fmt.Sprint(n - 1); r.Method == http.MethodGet && r.URL.Query().Get("starting_after") != want {
			t.Errorf("resume %d asked after %q, want %s", n-1, r.URL.Query().Get("starting_after"), want)
		}
		fmt.Fprintf(w, "data: {\"type\":\"response.output_text.delta\",\"sequence_number\":%d,\"output_index\":0,\"delta\":\"w \"}\n\n", n)
	}))
	defer ts.Close()
	p, err := openai.New(openai.Config{API: openai.Responses, BaseURL: ts.URL, APIKey: sentinel, Model: "m", HTTPClient: ts.Client()})
	if err != nil {
		t.Fatal(err)
	}
	req := ask("count")
	req.Background = true
	st, err := p.ChatStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	text, _, err := resumedText(t, st)
	if e := asError(t, err); e.Kind != providers.KindStreamTruncated || e.Partial != text || text != strings.Repeat("w ", 9) {
		t.Fatalf("%q: %v", text, err)
	}
	mu.Lock()
	if requests != 9 { // the stream and 8 resumes
		t.Fatalf("%d requests", requests)
	}
	requests, missing = 0, true
	mu.Unlock()

	st, err = p.ChatStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	text, _, err = resumedText(t, st)
	if e := asError(t, err); e.Kind != providers.KindNotFound || e.Partial != "w " || text != "w " ||
		!errors.Is(err, providers.ErrResponseGone) || !strings.Contains(e.Message, "resp_cut is gone") ||
		!strings.Contains(e.Message, "No response found.") {
		t.Fatalf("%q: %v", text, err)
	}
}

// Close aborts a resume under way: Recv returns at once, canceled, and the resumed request is
// abandoned.
func TestResponses_CloseAbortsAResumeUnderWay(t *testing.T) {
	resuming := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			close(resuming)
			<-r.Context().Done() // never answers: only the client's going away ends it
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_x\",\"object\":\"response\",\"status\":\"queued\"}}\n\n")
	}))
	defer ts.Close()
	p, err := openai.New(openai.Config{API: openai.Responses, BaseURL: ts.URL, APIKey: sentinel, Model: "m", HTTPClient: ts.Client()})
	if err != nil {
		t.Fatal(err)
	}
	req := ask("count")
	req.Background = true
	st, err := p.ChatStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { _, err := st.Recv(); errc <- err }()
	<-resuming
	_ = st.Close()
	if e := asError(t, <-errc); e.Kind != providers.KindCanceled {
		t.Fatalf("kind %s: %v", e.Kind, e)
	}
}
