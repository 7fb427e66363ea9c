package mocks_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steadyllm/steady/mocks"
)

// delays returns the first-token delay and straggler mark the journal holds for each request.
func delays(s *mocks.Server) ([]time.Duration, []bool) {
	var ds []time.Duration
	var st []bool
	for _, r := range s.Journal().Requests() {
		ds, st = append(ds, r.FirstTokenDelay), append(st, r.Straggler)
	}
	return ds, st
}

func TestLatency_EachModelHasItsOwnProfile(t *testing.T) {
	clock := &instantTimers{}
	s := newServer(t, clock.option(),
		mocks.WithLatency(mocks.LatencyProfile{FirstToken: 50 * time.Millisecond}),
		mocks.WithModelLatency("gpt-4o", mocks.LatencyProfile{FirstToken: 300 * time.Millisecond}),
		mocks.WithModelLatency("claude-sonnet-4-5", mocks.LatencyProfile{FirstToken: 700 * time.Millisecond}))
	var want []time.Duration
	for _, w := range wires() {
		d := 300 * time.Millisecond // OpenAI gpt-4o, and Azure's deployment gpt-4o
		if w.anthropic() {
			d = 700 * time.Millisecond
		}
		for _, body := range []string{w.body, w.jsonBody()} {
			if res, _ := mustDo(t, s, http.MethodPost, w.path, w.header, body); res.StatusCode != 200 {
				t.Fatalf("%s: status %d", w.name, res.StatusCode)
			}
			if got := clock.recorded(); !reflect.DeepEqual(got, []time.Duration{d}) {
				t.Errorf("%s: the server waited %v, want %v", w.name, got, d)
			}
			want = append(want, d)
		}
	}
	mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatFor("gpt-4o-mini", ""))
	want = append(want, 50*time.Millisecond) // no profile of its own: every request's
	if got, _ := delays(s); !reflect.DeepEqual(got, want) {
		t.Errorf("journal: first-token delays %v, want %v", got, want)
	}
}

func TestLatency_KeyProfileWinsOverModelProfile(t *testing.T) {
	clock := &instantTimers{}
	s := newServer(t, clock.option(),
		mocks.WithModelLatency("gpt-4o", mocks.LatencyProfile{FirstToken: time.Second}),
		mocks.WithKeyLatency("sk-east", mocks.LatencyProfile{FirstToken: 2 * time.Second}),
		mocks.WithKeyLatency("sk-west", mocks.LatencyProfile{FirstToken: 3 * time.Second}))
	for _, key := range []string{"sk-east", "sk-west", "sk-other"} {
		readAllClose(chatWithKey(t, s, "/v1/chat/completions", key, chatFor("gpt-4o", "")))
	}
	readAllClose(chatWithKey(t, s, "/v1/messages", "sk-west", messagesFor("claude-haiku-4-5", "50")))
	got, _ := delays(s)
	if want := []time.Duration{2 * time.Second, 3 * time.Second, time.Second, 3 * time.Second}; !reflect.DeepEqual(got, want) {
		t.Errorf("first-token delays %v, want %v", got, want)
	}
}

func TestLatency_ChangeAppliesToLaterRequests(t *testing.T) {
	clock := &instantTimers{}
	s := newServer(t, clock.option(), mocks.WithModelLatency("gpt-4o", mocks.LatencyProfile{FirstToken: time.Second}))
	chat := func() { mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatFor("gpt-4o", "")) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	chat()
	must(s.ModelLatency("gpt-4o", mocks.LatencyProfile{FirstToken: 2 * time.Second}))
	chat()
	must(s.Latency(mocks.LatencyProfile{FirstToken: 5 * time.Second}))
	chat() // the model's profile still wins
	must(s.ModelLatency("gpt-4o", mocks.LatencyProfile{}))
	chat() // removed: every request's
	must(s.KeyLatency("sk-test", mocks.LatencyProfile{FirstToken: 7 * time.Second}))
	chat()
	must(s.KeyLatency("sk-test", mocks.LatencyProfile{}))
	must(s.Latency(mocks.LatencyProfile{}))
	chat() // no profile at all
	got, _ := delays(s)
	want := []time.Duration{time.Second, 2 * time.Second, 2 * time.Second, 5 * time.Second, 7 * time.Second, 0}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("first-token delays %v, want %v", got, want)
	}
	if w := clock.recorded(); len(w) != 5 {
		t.Errorf("waits %v, want five (none without a profile)", w)
	}
}

func TestLatency_ChangesWhileRequestsRunAreSafe(t *testing.T) {
	clock := &instantTimers{}
	s := newServer(t, clock.option(), mocks.WithModelLatency("gpt-4o", mocks.LatencyProfile{FirstToken: time.Second}))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 200 {
			p := mocks.LatencyProfile{FirstToken: time.Duration(i%3+1) * time.Second, Straggler: time.Minute, StragglerRate: 0.5}
			if err := errors.Join(s.ModelLatency("gpt-4o", p), s.KeyLatency("sk-other", p), s.Latency(p)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := do(t, context.Background(), s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatFor("gpt-4o", ""))
			if err == nil {
				readAllClose(res)
			}
		}()
	}
	wg.Wait()
	ds, st := delays(s)
	for i, d := range ds {
		if st[i] != (d == time.Minute) || d != d.Truncate(time.Second) || d < time.Second || (d > 3*time.Second && d != time.Minute) {
			t.Errorf("request %d: delay %v straggler %t, not one the profiles could draw", i+1, d, st[i])
		}
	}
}

func TestLatency_StragglerEveryCountsExactly(t *testing.T) {
	clock := &instantTimers{}
	p := mocks.LatencyProfile{FirstToken: 10 * time.Millisecond, Jitter: 5 * time.Millisecond,
		Straggler: time.Second, StragglerEvery: 4}
	s := newServer(t, clock.option(), mocks.WithModelLatency("gpt-4o", p))
	const n = 40
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := do(t, context.Background(), s, http.MethodPost, "/v1/chat/completions", openAIHeaders(),
				`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
			if err != nil {
				t.Error(err)
				return
			}
			readAllClose(res)
		}()
	}
	wg.Wait()
	if got := s.Journal().Stats().Stragglers; got != n/4 {
		t.Errorf("Stats().Stragglers = %d, want %d", got, n/4)
	}
	ds, st := delays(s)
	stragglers := 0
	for i := range ds {
		switch {
		case st[i]:
			stragglers++
			if ds[i] != time.Second {
				t.Errorf("a straggler's delay %v, want 1s", ds[i])
			}
		case ds[i] < 10*time.Millisecond || ds[i] > 15*time.Millisecond:
			t.Errorf("delay %v outside FirstToken plus jitter [10ms, 15ms]", ds[i])
		}
	}
	if stragglers != n/4 {
		t.Errorf("journal marks %d stragglers, want %d", stragglers, n/4)
	}
	// One at a time, the count restarts when the profile is set again: the 4th, the 8th, …
	if err := s.ModelLatency("gpt-4o", p); err != nil {
		t.Fatal(err)
	}
	s.Journal().Reset()
	for range 8 {
		mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatFor("gpt-4o", ""))
	}
	if _, st := delays(s); !reflect.DeepEqual(st, []bool{false, false, false, true, false, false, false, true}) {
		t.Errorf("stragglers %v, want every fourth", st)
	}
}

func TestLatency_SameSeedSameDraws(t *testing.T) {
	p := mocks.LatencyProfile{FirstToken: 20 * time.Millisecond, Jitter: 30 * time.Millisecond,
		StragglerRate: 0.25, Straggler: 2 * time.Second, Seed: 7}
	run := func(p mocks.LatencyProfile) ([]time.Duration, []bool) {
		clock := &instantTimers{}
		s := newServer(t, clock.option(), mocks.WithLatency(p))
		for range 40 {
			mustDo(t, s, http.MethodPost, "/v1/messages", anthropicHeaders(), messagesFor("claude-haiku-4-5", "20"))
		}
		return delays(s)
	}
	d1, s1 := run(p)
	d2, s2 := run(p)
	if !reflect.DeepEqual(d1, d2) || !reflect.DeepEqual(s1, s2) {
		t.Errorf("the same seed drew differently:\n%v %v\n%v %v", d1, s1, d2, s2)
	}
	stragglers := 0
	for _, s := range s1 {
		if s {
			stragglers++
		}
	}
	if stragglers == 0 || stragglers == len(s1) {
		t.Errorf("%d stragglers in %d at rate 0.25", stragglers, len(s1))
	}
	p.Seed = 8
	if d3, _ := run(p); reflect.DeepEqual(d1, d3) {
		t.Error("another seed drew the same delays")
	}
}

func TestLatency_OnlyAnswersWithContentAreDelayed(t *testing.T) {
	clock := &instantTimers{}
	s := newServer(t, clock.option(),
		mocks.WithLatency(mocks.LatencyProfile{FirstToken: time.Second, Straggler: time.Minute, StragglerEvery: 2}),
		mocks.WithScript(mocks.Status(503), mocks.ResetConnection(), mocks.Malformed(), mocks.OK(), mocks.OK()))
	post := func() {
		if res, err := do(t, context.Background(), s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatBody); err == nil {
			readAllClose(res)
		}
	}
	for range 5 { // 503, reset, malformed, then two answers
		post()
	}
	mustDo(t, s, http.MethodGet, "/v1/models", openAIHeaders(), "")
	mustDo(t, s, http.MethodPost, "/v1/chat/completions", map[string]string{"Content-Type": "application/json"}, chatBody) // 401
	ds, st := delays(s)
	want := []time.Duration{0, 0, 0, time.Second, time.Minute, 0, 0}
	if !reflect.DeepEqual(ds, want) || !reflect.DeepEqual(st, []bool{false, false, false, false, true, false, false}) {
		t.Errorf("delays %v stragglers %v, want %v and only the 5th (the 2nd delayed) a straggler", ds, st, want)
	}
}

func TestLatency_ChunkDelayPacesContentEvents(t *testing.T) {
	for _, w := range wires() {
		t.Run(w.name, func(t *testing.T) {
			clock := &instantTimers{}
			s := newServer(t, clock.option(), mocks.WithLatency(mocks.LatencyProfile{ChunkDelay: 15 * time.Millisecond}))
			_, evs, err := stream(t, s, w.path, w.header, w.body)
			if err != nil || len(evs) == 0 {
				t.Fatalf("stream: %v, %d events", err, len(evs))
			}
			// "one two three four": four content events, a wait before each but the first.
			d := 15 * time.Millisecond
			if got := clock.recorded(); !reflect.DeepEqual(got, []time.Duration{d, d, d}) {
				t.Errorf("waits %v, want three of %v", got, d)
			}
			mustDo(t, s, http.MethodPost, w.path, w.header, w.jsonBody())
			if got := clock.recorded(); len(got) != 0 {
				t.Errorf("a JSON answer waited %v", got)
			}
		})
	}
}

func TestLatency_ValidationNamesFieldValueAndRange(t *testing.T) {
	cases := []struct {
		p    mocks.LatencyProfile
		want []string
	}{
		{mocks.LatencyProfile{FirstToken: -time.Second}, []string{"FirstToken -1s out of range [0s, 24h0m0s]"}},
		{mocks.LatencyProfile{Jitter: 25 * time.Hour}, []string{"Jitter 25h0m0s out of range"}},
		{mocks.LatencyProfile{Straggler: -1}, []string{"Straggler -1ns out of range"}},
		{mocks.LatencyProfile{ChunkDelay: -time.Millisecond}, []string{"ChunkDelay -1ms out of range"}},
		{mocks.LatencyProfile{StragglerRate: 1.5}, []string{"StragglerRate 1.5 out of range [0, 1]"}},
		{mocks.LatencyProfile{StragglerRate: -0.1}, []string{"StragglerRate -0.1 out of range [0, 1]"}},
		{mocks.LatencyProfile{StragglerEvery: -3}, []string{"StragglerEvery -3 out of range [0, 2147483647]"}},
		{mocks.LatencyProfile{StragglerRate: 0.1, StragglerEvery: 4}, []string{"StragglerRate 0.1 and StragglerEvery 4 both set"}},
		{mocks.LatencyProfile{FirstToken: -1, StragglerRate: 2}, []string{"FirstToken -1ns", "StragglerRate 2"}},
	}
	s := newServer(t, mocks.WithModelLatency("gpt-4o", mocks.LatencyProfile{FirstToken: time.Second}),
		(&instantTimers{}).option())
	for _, c := range cases {
		for what, err := range map[string]error{"Validate": c.p.Validate(), "Latency": s.Latency(c.p),
			"ModelLatency": s.ModelLatency("gpt-4o", c.p), "KeyLatency": s.KeyLatency("k", c.p)} {
			for _, want := range c.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%s(%+v) = %v, want %q", what, c.p, err, want)
				}
			}
		}
	}
	if err := s.ModelLatency("", mocks.LatencyProfile{}); err == nil || !strings.Contains(err.Error(), "model name is empty") {
		t.Errorf("empty model: %v", err)
	}
	// A refused change changes nothing.
	mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatFor("gpt-4o", ""))
	if got, _ := delays(s); !reflect.DeepEqual(got, []time.Duration{time.Second}) {
		t.Errorf("after refused changes: %v, want [1s]", got)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "StragglerRate 3 out of range [0, 1]") {
			t.Errorf("NewServer with a bad profile: panic %v", r)
		}
	}()
	mocks.NewServer(mocks.WithModelLatency("m", mocks.LatencyProfile{StragglerRate: 3})).Close()
}

func TestLatency_ScenarioFile(t *testing.T) {
	cfg, err := mocks.ParseConfig([]byte(`{
		"latency": {"firstTokenMs": 40},
		"modelLatency": {"gpt-4o": {"firstTokenMs": 100, "stragglerMs": 900, "stragglerEvery": 2, "headersFirst": true}},
		"keyLatency": {"sk-slow": {"firstTokenMs": 5000, "chunkDelayMs": 20}}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	clock := &instantTimers{}
	s := newServer(t, mocks.WithConfig(cfg), clock.option())
	for range 2 {
		mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatFor("gpt-4o", ""))
	}
	readAllClose(chatWithKey(t, s, "/v1/chat/completions", "sk-slow", chatFor("gpt-4o", "")))
	mustDo(t, s, http.MethodPost, "/v1/messages", anthropicHeaders(), messagesFor("claude-haiku-4-5", "20"))
	ds, st := delays(s)
	if want := []time.Duration{100 * time.Millisecond, 900 * time.Millisecond, 5 * time.Second, 40 * time.Millisecond}; !reflect.DeepEqual(ds, want) || !st[1] {
		t.Errorf("delays %v stragglers %v, want %v with the 2nd a straggler", ds, st, want)
	}
	b, _ := json.Marshal(cfg.ModelLatency["gpt-4o"])
	if want := `{"firstTokenMs":100,"stragglerEvery":2,"stragglerMs":900,"headersFirst":true}`; string(b) != want {
		t.Errorf("marshalled %s, want %s", b, want)
	}

	for file, want := range map[string]string{
		`{"modelLatency": {"gpt-4o": {"stragglerRate": 1.5}}}`:     "modelLatency.gpt-4o: stragglerRate 1.5 out of range [0, 1]",
		`{"latency": {"firstTokenMs": -5}}`:                        "latency: firstTokenMs -5 out of range [0, 86400000]",
		`{"keyLatency": {"sk-secret": {"jitterMs": 90000000}}}`:    "keyLatency.[key]: jitterMs 90000000 out of range [0, 86400000]",
		`{"latency": {"stragglerRate": 0.5, "stragglerEvery": 3}}`: "stragglerRate 0.5 and stragglerEvery 3 both set",
		`{"latency": {"stragglerMs": 1e300}}`:                      "stragglerMs 1e+300 out of range [0, 86400000]",
		`{"latency": {"firstToken": 5}}`:                           "unknown field",
		`{"modelLatency": {"": {"firstTokenMs": 5}}}`:              "modelLatency: a profile for an empty name",
		`{"latency": {"stragglerEvery": -1}}`:                      "stragglerEvery -1 out of range [0, 2147483647]",
	} {
		_, err := mocks.ParseConfig([]byte(file))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", file, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "sk-secret") {
			t.Errorf("%s: the error repeats the key: %v", file, err)
		}
	}
}
