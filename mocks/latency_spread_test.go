package mocks_test

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/mocks"
)

func TestLatencySpread_TheJournalHoldsTheDrawnDelays(t *testing.T) {
	p := mocks.LatencyProfile{FirstToken: 2 * time.Millisecond, Spread: 0.5, Seed: 1}
	run := func(t *testing.T) []time.Duration {
		clock := &instantTimers{}
		s := newServer(t, clock.option(), mocks.WithLatency(p))
		for i := range 20 {
			body := chatFor("gpt-4o", "")
			if i%2 == 1 {
				body = chatFor("gpt-4o", `"stream":true,`)
			}
			if res, _ := mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), body); res.StatusCode != 200 {
				t.Fatalf("request %d: status %d", i, res.StatusCode)
			}
		}
		ds, st := delays(s)
		// What the server waited is what the journal says it drew.
		if waits := clock.recorded(); !reflect.DeepEqual(waits, ds) {
			t.Errorf("the server waited %v, the journal says %v", waits, ds)
		}
		for i, d := range ds {
			if d <= 0 || d == p.FirstToken || st[i] {
				t.Errorf("request %d: delay %v straggler %t, want a drawn delay, positive and not %v", i, d, st[i], p.FirstToken)
			}
		}
		return ds
	}
	first := run(t)
	if len(first) != 20 {
		t.Fatalf("%d delays in the journal, want 20", len(first))
	}
	// The profile's source, drawn by hand: FirstToken × exp(Spread × Z) for each request.
	rng := rand.New(rand.NewPCG(p.Seed, 0x1a7e))
	for i, d := range first {
		if want := time.Duration(math.Round(float64(p.FirstToken) * math.Exp(p.Spread*rng.NormFloat64()))); d != want {
			t.Errorf("request %d: delay %v, want %v", i, d, want)
		}
	}
	if again := run(t); !reflect.DeepEqual(first, again) {
		t.Errorf("the same seed on a fresh server drew\n%v\nthen\n%v", first, again)
	}
}

func TestLatencySpread_ValidationNamesFieldValueAndRange(t *testing.T) {
	s := newServer(t, (&instantTimers{}).option())
	for _, c := range []struct {
		spread float64
		want   string
	}{
		{-0.1, "Spread -0.1 out of range [0, 4]"},
		{math.NaN(), "Spread NaN out of range [0, 4]"},
		{math.Inf(1), "Spread +Inf out of range [0, 4]"},
		{4.5, "Spread 4.5 out of range [0, 4]"},
	} {
		p := mocks.LatencyProfile{FirstToken: time.Second, Spread: c.spread}
		for what, err := range map[string]error{"Validate": p.Validate(), "Latency": s.Latency(p),
			"ModelLatency": s.ModelLatency("gpt-4o", p), "KeyLatency": s.KeyLatency("k", p),
			"RouteLatency": s.RouteLatency(mocks.RouteChat, p)} {
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s(Spread %v) = %v, want %q", what, c.spread, err, c.want)
			}
		}
	}
	for _, spread := range []float64{0, 0.25, mocks.MaxLatencySpread} {
		if err := (mocks.LatencyProfile{FirstToken: time.Second, Spread: spread}).Validate(); err != nil {
			t.Errorf("Spread %v: %v, want it allowed", spread, err)
		}
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "Spread -1 out of range [0, 4]") {
			t.Errorf("NewServer with a bad spread: panic %v", r)
		}
	}()
	mocks.NewServer(mocks.WithLatency(mocks.LatencyProfile{Spread: -1})).Close()
}

func TestLatencySpread_ScenarioFileAndAdminAPI(t *testing.T) {
	p := mocks.LatencyProfile{FirstToken: 80 * time.Millisecond, Jitter: 5 * time.Millisecond, Spread: 0.3, Seed: 7}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"firstTokenMs":80,"jitterMs":5,"spread":0.3,"seed":7}`; string(b) != want {
		t.Errorf("marshalled %s, want %s", b, want)
	}
	var back mocks.LatencyProfile
	if err := json.Unmarshal(b, &back); err != nil || back != p {
		t.Errorf("round trip: %+v, %v; want %+v", back, err, p)
	}

	cfg, err := mocks.ParseConfig([]byte(`{"modelLatency": {"gpt-4o": {"firstTokenMs": 50, "spread": 0.6}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.ModelLatency["gpt-4o"]; got.Spread != 0.6 || got.FirstToken != 50*time.Millisecond {
		t.Errorf("scenario file read %+v, want Spread 0.6", got)
	}
	for file, want := range map[string]string{
		`{"latency": {"spread": 4.5}}`:                        "latency: spread 4.5 out of range [0, 4]",
		`{"modelLatency": {"gpt-4o": {"spread": -0.1}}}`:      "modelLatency.gpt-4o: spread -0.1 out of range [0, 4]",
		`{"keyLatency": {"sk-secret": {"spread": 1e300}}}`:    "keyLatency.[key]: spread 1e+300 out of range [0, 4]",
		`{"routeLatency": {"/v1/messages": {"spread": "x"}}}`: "spread",
	} {
		_, err := mocks.ParseConfig([]byte(file))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", file, err, want)
		}
	}

	// Through the admin API: the Go client's profile arrives whole, and a bad one is refused
	// naming profile.spread.
	s := newServer(t, (&instantTimers{}).option())
	a := mocks.Admin(s.URL())
	if err := a.Latency(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if st, err := a.State(context.Background()); err != nil || st.Latency.All == nil || *st.Latency.All != p {
		t.Errorf("state after setting %+v: %+v, %v", p, st.Latency.All, err)
	}
	code, body := adminDo(t, s, http.MethodPut, "latency", "application/json", `{"profile":{"firstTokenMs":5,"spread":9}}`)
	var e struct {
		Error mocks.AdminError `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || code != 400 ||
		!reflect.DeepEqual(e.Error.Problems, []mocks.Problem{{Field: "profile.spread", Value: 9.0, Allowed: "out of range [0, 4]"}}) {
		t.Errorf("a spread of 9: status %d: %s", code, body)
	}
	code, body = adminDo(t, s, http.MethodPut, "latency", "application/json", `{"profile":{"sprad":0.5}}`)
	if code != 400 || !strings.Contains(body, "spread, stragglerRate") {
		t.Errorf("a misspelt key: status %d: %s, want the keys listed with spread", code, body)
	}
}
