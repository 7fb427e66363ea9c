package deferral_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// backgroundClient is a client of one Responses provider on s, and the provider's origin.
func backgroundClient(t *testing.T, s *mocks.Server) (*client.Client, string) {
	t.Helper()
	o := resilience.DefaultOptions()
	o.RetryCount = 0
	c, err := client.New(client.WithProvider("openai", o, func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{API: openai.Responses, BaseURL: s.OpenAIBaseURL(), APIKey: "sk-test-key", HTTPClient: hc, Model: "m"})
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c, c.Provider("openai").(providers.Scoper).SharingScope()
}

// report asks for a report in background mode.
func report() *providers.ChatRequest {
	return &providers.ChatRequest{Background: true, Messages: []providers.Message{{Role: providers.RoleUser, Content: "the quarterly report"}}}
}

// viaQueue is a round trip of a through its JSON form, as a queue keeps it.
func viaQueue(t *testing.T, a deferral.Awaiting) deferral.Awaiting {
	t.Helper()
	data, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	back, err := deferral.ParseAwaiting(data)
	if err != nil || back.Stored != a.Stored || back.Polls != a.Polls || !back.Started.Equal(a.Started) {
		t.Fatalf("%s → %+v, %v", data, back, err)
	}
	return back
}

// A job starts a background answer and hands the queue a Pending instead of holding the
// connection; its later runs look at the answer through the Awaiting it kept — later each time
// — until it is finished. The prompt is sent once.
func TestAwait_LooksUntilTheAnswerIsFinishedAndNeverSendsThePromptAgain(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("Revenue grew."))
	defer s.Close()
	c, origin := backgroundClient(t, s)
	d := decider(t)
	resp, err := c.Chat(context.Background(), report(), client.Deferred(1))
	if err != nil {
		t.Fatal(err)
	}
	var p *deferral.Pending
	if !errors.As(d.Defer(resp), &p) || p.Next.Polls != 0 || p.Next.Stored.Origin != origin || !p.Next.Started.Equal(now) ||
		p.Decision.Delay != deferral.DefaultPollFirst || p.Decision.Source != deferral.SourcePoll || !p.Decision.Retry ||
		p.Status != providers.StatusQueued || !strings.Contains(p.Error(), resp.Stored.ID) {
		t.Fatalf("%+v", p)
	}
	// First look: in progress, the next look twice as late.
	got, err := d.Await(context.Background(), c.Background(client.Deferred(1)), viaQueue(t, p.Next), 1)
	if got != nil || !errors.As(err, &p) || p.Next.Polls != 1 || p.Decision.Delay != 2*deferral.DefaultPollFirst || p.Status != providers.StatusInProgress {
		t.Fatalf("%+v %v", got, err)
	}
	got, err = d.Await(context.Background(), c.Background(client.Deferred(1)), viaQueue(t, p.Next), 1)
	if err != nil || got.Message.Content != "Revenue grew." || got.Status != providers.StatusCompleted || got.Provider != "openai" {
		t.Fatalf("%+v %v", got, err)
	}
	var posts, gets int
	for _, r := range s.Journal().Requests() {
		switch r.Method {
		case http.MethodPost:
			posts++
		case http.MethodGet:
			gets++
		}
	}
	if posts != 1 || gets != 2 {
		t.Fatalf("%d POSTs, %d GETs: want the prompt once and two looks", posts, gets)
	}
	// An answer finished at once is the job's result: nothing to wait for.
	if d.Defer(got) != nil || d.Defer(nil) != nil {
		t.Fatal("a finished answer was deferred")
	}
}

// The poll backoff doubles from PollFirst to PollMax, jittered within ±20 %; a server's hint
// (Retry-After on the read, a spent rate-limit budget) that is later wins, and every wait lies
// within [MinDelay, MaxDelay].
func TestAwait_PollBackoffAndTheServersHints(t *testing.T) {
	d := deferral.Decider{Now: func() time.Time { return now }, Random: func() float64 { return 0.5 },
		PollFirst: time.Second, PollMax: 5 * time.Second}
	stored := &providers.StoredResponse{ID: "resp_1", Origin: "o"}
	pending := &providers.ChatResponse{Status: providers.StatusInProgress, Stored: stored}
	var p *deferral.Pending
	if !errors.As(d.Defer(pending), &p) || p.Decision.Delay != time.Second {
		t.Fatalf("%+v", p)
	}
	for polls, want := range map[int]time.Duration{0: time.Second, 1: 2 * time.Second, 2: 4 * time.Second, 3: 5 * time.Second, 50: 5 * time.Second} {
		r := &stub{resp: pending}
		_, err := d.Await(context.Background(), r, deferral.Awaiting{Stored: *stored, Polls: polls, Started: now}, 1)
		if !errors.As(err, &p) || p.Decision.Delay != min(2*want, 5*time.Second) || p.Next.Polls != polls+1 {
			t.Errorf("after look %d: %+v", polls+1, p)
		}
	}
	for _, r := range []float64{0, 0.999} {
		j := d
		j.Random = func() float64 { return r }
		if err := j.Defer(pending); !errors.As(err, &p) || p.Decision.Delay < 800*time.Millisecond || p.Decision.Delay > 1200*time.Millisecond {
			t.Errorf("jitter %v: %v", r, p.Decision.Delay)
		}
	}
	hinted := *pending
	hinted.RetryAfter = 30 * time.Second
	if err := d.Defer(&hinted); !errors.As(err, &p) || p.Decision.Delay != 30*time.Second || p.Decision.Source != deferral.SourceHint {
		t.Fatalf("hint: %+v", p.Decision)
	}
	spent := *pending
	spent.RateLimit = &providers.RateLimit{Requests: providers.RateBudget{Limit: 10, Remaining: 0, Reset: now.Add(45 * time.Second)}}
	if err := d.Defer(&spent); !errors.As(err, &p) || p.Decision.Delay != 45*time.Second || p.Decision.Reason != "the rate-limit reset" {
		t.Fatalf("reset: %+v", p.Decision)
	}
	far := *pending
	far.RateLimit = &providers.RateLimit{Requests: providers.RateBudget{Limit: 10, Remaining: 0, Reset: now.Add(1000 * time.Hour)}}
	tiny := deferral.Decider{Now: d.Now, Random: d.Random, PollFirst: time.Nanosecond}
	for _, c := range []struct {
		d    deferral.Decider
		resp *providers.ChatResponse
		want time.Duration
	}{{d, &far, deferral.MaxDelay}, {tiny, pending, deferral.MinDelay}} {
		if err := c.d.Defer(c.resp); !errors.As(err, &p) || p.Decision.Delay != c.want || p.Decision.Wait(now) != c.want {
			t.Errorf("bounds: %+v, want %v", p.Decision, c.want)
		}
	}
}

// stub is a Retriever that answers resp, or err; it counts its reads and cancels.
type stub struct {
	resp            *providers.ChatResponse
	err             error
	cancel          *providers.ChatResponse
	reads, cancels  atomic.Int32
	lastID, lastOrg string
}

func (s *stub) Retrieve(_ context.Context, st providers.StoredResponse) (*providers.ChatResponse, error) {
	s.reads.Add(1)
	s.lastID, s.lastOrg = st.ID, st.Origin
	return s.resp, s.err
}

func (s *stub) Cancel(_ context.Context, _ providers.StoredResponse) (*providers.ChatResponse, error) {
	s.cancels.Add(1)
	return s.cancel, nil
}

// A read that fails is a deferred failure with the same Awaiting kept: a rate limit comes back
// at its hint — and a look during the pause that follows waits for nothing and sends nothing —,
// an overload after the backoff. An answer that is gone or failed, or that names an origin the
// client does not have, ends the job: reading it again changes nothing.
func TestAwait_FailedReads(t *testing.T) {
	s := mocks.NewServer(mocks.WithRouteScript(mocks.RouteStoredResponses, mocks.RateLimited(7*time.Second), mocks.Status(503)))
	defer s.Close()
	c, _ := backgroundClient(t, s)
	d := decider(t)
	resp, err := c.Chat(context.Background(), report())
	if err != nil {
		t.Fatal(err)
	}
	a := deferral.Awaiting{Stored: *resp.Stored, Started: now}
	look := func(attempt int) (*deferral.Error, int) {
		t.Helper()
		before := s.Journal().Len()
		_, err := d.Await(context.Background(), c.Background(client.Deferred(attempt)), a, attempt)
		var de *deferral.Error
		if !errors.As(err, &de) {
			t.Fatalf("%v", err)
		}
		return de, s.Journal().Len() - before
	}
	if de, sent := look(1); !de.Decision.Retry || de.Decision.Kind != providers.KindRateLimited || de.Decision.Delay != 7*time.Second ||
		de.Decision.Source != deferral.SourceHint || sent != 1 {
		t.Fatalf("429: %v (%d sent)", de, sent)
	}
	if de, sent := look(2); !de.Decision.Retry || de.Decision.Kind != providers.KindRateLimited || de.Decision.Delay > 7*time.Second ||
		de.Decision.Source != deferral.SourceHint || sent != 0 {
		t.Fatalf("during the pause: %v (%d sent)", de, sent)
	}
	outage := mocks.NewServer(mocks.WithRouteScript(mocks.RouteStoredResponses, mocks.Status(503)))
	defer outage.Close()
	oc, _ := backgroundClient(t, outage)
	if resp, err = oc.Chat(context.Background(), report()); err != nil {
		t.Fatal(err)
	}
	_, err = d.Await(context.Background(), oc.Background(client.Deferred(2)), deferral.Awaiting{Stored: *resp.Stored, Started: now}, 2)
	var de *deferral.Error
	if !errors.As(err, &de) || !de.Decision.Retry || de.Decision.Kind != providers.KindOverloaded || de.Decision.Delay != 2*time.Second ||
		de.Decision.Source != deferral.SourceBackoff || outage.Journal().Len() != 2 || strings.Count(err.Error(), "deferred:") != 1 {
		t.Fatalf("503: %v", err)
	}

	gone := mocks.NewServer(mocks.WithScript(mocks.Step{Expire: true}))
	defer gone.Close()
	gc, _ := backgroundClient(t, gone)
	resp, err = gc.Chat(context.Background(), report())
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Await(context.Background(), gc.Background(), deferral.Awaiting{Stored: *resp.Stored, Started: now}, 1)
	if !errors.As(err, &de) || de.Decision.Retry || !errors.Is(err, providers.ErrResponseGone) {
		t.Fatalf("gone: %v", err)
	}

	sent := s.Journal().Len()
	foreign := deferral.Awaiting{Stored: providers.StoredResponse{ID: resp.Stored.ID, Origin: strings.Repeat("f", 32)}, Started: now}
	_, err = d.Await(context.Background(), c.Background(), foreign, 1)
	if !errors.As(err, &de) || de.Decision.Retry || de.Decision.Kind != providers.KindBadRequest || s.Journal().Len() != sent {
		t.Fatalf("foreign origin: %v (%d requests)", err, s.Journal().Len()-sent)
	}

	failed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"resp_f","object":"response","status":"failed","output":[],"error":{"code":"server_error","message":"The model crashed."}}`)
	}))
	defer failed.Close()
	p, err := openai.New(openai.Config{API: openai.Responses, BaseURL: failed.URL, APIKey: "k", HTTPClient: failed.Client()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Await(context.Background(), p, deferral.Awaiting{Stored: providers.StoredResponse{ID: "resp_f", Origin: p.SharingScope()}, Started: now}, 1)
	if !errors.As(err, &de) || de.Decision.Retry || !errors.Is(err, providers.ErrResponseFailed) || de.Decision.Kind != providers.KindUnavailable {
		t.Fatalf("failed answer: %v", err)
	}
}

// An answer still pending MaxAwait after it started is cancelled and the wait ends for good; an
// answer that finished as it was cancelled is the result.
func TestAwait_GivesUpAfterMaxAwait(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	c, _ := backgroundClient(t, s)
	clock := now
	d := deferral.Decider{Now: func() time.Time { return clock }, MaxAwait: time.Hour}
	resp, err := c.Chat(context.Background(), report())
	if err != nil {
		t.Fatal(err)
	}
	clock = now.Add(time.Hour + time.Second)
	_, err = d.Await(context.Background(), c.Background(), deferral.Awaiting{Stored: *resp.Stored, Started: now}, 1)
	var de *deferral.Error
	if !errors.As(err, &de) || de.Decision.Retry || de.Decision.Kind != providers.KindTimeout || !strings.Contains(err.Error(), "cancelled") {
		t.Fatalf("%v", err)
	}
	if last, _ := s.Journal().Last(); !strings.HasSuffix(last.Path, "/cancel") {
		t.Fatalf("last request %s %s: not a cancel", last.Method, last.Path)
	}
	finished := &stub{resp: &providers.ChatResponse{Status: providers.StatusInProgress},
		cancel: &providers.ChatResponse{Status: providers.StatusCompleted, Message: providers.Message{Content: "just in time"}}}
	got, err := d.Await(context.Background(), finished, deferral.Awaiting{Stored: *resp.Stored, Started: now}, 1)
	if err != nil || got.Message.Content != "just in time" || finished.cancels.Load() != 1 {
		t.Fatalf("%+v %v", got, err)
	}
}

// What comes back from a queue is checked before anything is read: a bad Awaiting, a start in
// the future, a nil context or Retriever end the job with a bad_request and read nothing.
func TestAwait_RefusesWhatItCannotTrust(t *testing.T) {
	d := decider(t)
	good := deferral.Awaiting{Stored: providers.StoredResponse{ID: "resp_1", Origin: "abc"}, Started: now}
	r := &stub{resp: &providers.ChatResponse{Status: providers.StatusCompleted}}
	for name, c := range map[string]struct {
		ctx context.Context
		r   deferral.Retriever
		a   deferral.Awaiting
	}{
		"no ID":             {context.Background(), r, deferral.Awaiting{Stored: providers.StoredResponse{Origin: "abc"}, Started: now}},
		"no origin":         {context.Background(), r, deferral.Awaiting{Stored: providers.StoredResponse{ID: "resp_1"}, Started: now}},
		"a path in the ID":  {context.Background(), r, deferral.Awaiting{Stored: providers.StoredResponse{ID: "../../v1/files", Origin: "abc"}, Started: now}},
		"negative polls":    {context.Background(), r, deferral.Awaiting{Stored: good.Stored, Polls: -1, Started: now}},
		"no start":          {context.Background(), r, deferral.Awaiting{Stored: good.Stored}},
		"start in a decade": {context.Background(), r, deferral.Awaiting{Stored: good.Stored, Started: now.AddDate(10, 0, 0)}},
		"nil context":       {nil, r, good}, //nolint:staticcheck // the point of the case
		"nil retriever":     {context.Background(), nil, good},
	} {
		_, err := d.Await(c.ctx, c.r, c.a, 1)
		var de *deferral.Error
		if !errors.As(err, &de) || de.Decision.Retry || de.Decision.Kind != providers.KindBadRequest {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n := r.reads.Load(); n != 0 {
		t.Fatalf("%d reads", n)
	}
	if _, err := d.Await(context.Background(), r, good, 1); err != nil || r.lastID != "resp_1" || r.lastOrg != "abc" {
		t.Fatalf("%v", err)
	}
	var de *deferral.Error
	if err := d.Defer(&providers.ChatResponse{Status: providers.StatusQueued}); !errors.As(err, &de) || de.Decision.Retry {
		t.Fatalf("a pending answer without its StoredResponse: %v", err)
	}
}

// The JSON form read back from a queue is bounded and strict.
func TestParseAwaiting_BoundedAndStrict(t *testing.T) {
	good := `{"v":1,"id":"resp_1","origin":"abc","polls":2,"started":"2026-11-23T12:00:00Z"}`
	if a, err := deferral.ParseAwaiting([]byte(good)); err != nil || a.Polls != 2 || a.Stored.ID != "resp_1" || !a.Started.Equal(now) {
		t.Fatalf("%+v %v", a, err)
	}
	for name, in := range map[string]string{
		"empty":           ``,
		"null":            `null`,
		"not JSON":        `resp_1`,
		"another version": strings.Replace(good, `"v":1`, `"v":2`, 1),
		"unknown field":   strings.Replace(good, `"polls"`, `"extra":1,"polls"`, 1),
		"two values":      good + good,
		"a newline in ID": strings.Replace(good, `resp_1`, `resp\n1`, 1),
		"a slash in ID":   strings.Replace(good, `resp_1`, `resp/1`, 1),
		"too many polls":  strings.Replace(good, `"polls":2`, `"polls":100001`, 1),
		"a bad time":      strings.Replace(good, `2026-11-23T12:00:00Z`, `yesterday`, 1),
		"year 1":          strings.Replace(good, `2026-11-23`, `0001-01-01`, 1),
		"too long":        strings.Replace(good, `resp_1`, strings.Repeat("r", 2000), 1),
		"a long origin":   strings.Replace(good, `"abc"`, `"`+strings.Repeat("a", 257)+`"`, 1),
	} {
		a, err := deferral.ParseAwaiting([]byte(in))
		var pe *providers.Error
		if !errors.As(err, &pe) || pe.Kind != providers.KindBadRequest || a != (deferral.Awaiting{}) || len(err.Error()) > 600 {
			t.Errorf("%s: %+v %v", name, a, err)
		}
	}
	if _, err := json.Marshal(deferral.Awaiting{}); err == nil {
		t.Fatal("an invalid Awaiting was written")
	}
}

// Whatever a queue hands back, ParseAwaiting never panics, refuses with a bad_request, and
// what it accepts is valid and survives its own round trip.
func FuzzParseAwaiting(f *testing.F) {
	f.Add([]byte(`{"v":1,"id":"resp_1","origin":"abc","polls":2,"started":"2026-11-23T12:00:00Z"}`))
	f.Add([]byte(`{"v":1,"id":"","origin":"","polls":-1,"started":"0001-01-01T00:00:00Z"}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"v":1,"id":"a\u0000b","origin":"o","polls":0,"started":"2026-11-23T12:00:00+14:00"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := deferral.ParseAwaiting(data)
		if err != nil {
			var pe *providers.Error
			if !errors.As(err, &pe) || pe.Kind != providers.KindBadRequest || a != (deferral.Awaiting{}) {
				t.Fatalf("%q: %v", data, err)
			}
			return
		}
		if a.Validate() != nil {
			t.Fatalf("%q: accepted an invalid Awaiting %+v", data, a)
		}
		out, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		back, err := deferral.ParseAwaiting(out)
		if err != nil || back.Stored != a.Stored || back.Polls != a.Polls || !back.Started.Equal(a.Started) {
			t.Fatalf("%q → %s → %+v %v", data, out, back, err)
		}
	})
}

// The record docs/job-queues.md shows is the form an Awaiting is written in: it reads back,
// and writes out again byte for byte.
func TestAwaiting_TheGuidesRecordIsItsForm(t *testing.T) {
	data, err := os.ReadFile("testdata/awaiting.json")
	if err != nil {
		t.Fatal(err)
	}
	a, err := deferral.ParseAwaiting(bytes.TrimSpace(data))
	if err != nil || a.Polls != 2 || a.Stored.ID != "resp_68c2a9f1e4b7" {
		t.Fatalf("%+v %v", a, err)
	}
	out, err := json.Marshal(a)
	if err != nil || !bytes.Equal(out, bytes.TrimSpace(data)) {
		t.Fatalf("written back as %s (%v)", out, err)
	}
}
