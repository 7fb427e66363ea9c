package mocks_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/mocks"
)

func TestLoadConfig_ExampleScenarioFile(t *testing.T) {
	cfg, err := mocks.LoadConfig("testdata/scenario-example.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Script) != 3 || cfg.Script[1].RetryAfter != 150*time.Millisecond || cfg.Script[1].Header.Get("X-Example") != "rate-limited" {
		t.Errorf("script = %+v", cfg.Script)
	}
	if st := cfg.Scenarios["slow-stream"][0]; st.Delay != 200*time.Millisecond || st.ChunkDelay != 50*time.Millisecond || !st.Forever {
		t.Errorf("slow-stream = %+v", st)
	}
	s := newServer(t, mocks.WithConfig(cfg))
	if got, want := statuses(t, s, 4, ""), []int{503, 429, 200, 200}; !reflect.DeepEqual(got, want) {
		t.Errorf("script: %v, want %v", got, want)
	}
	if got, want := statuses(t, s, 3, "flaky"), []int{529, 529, 200}; !reflect.DeepEqual(got, want) {
		t.Errorf("flaky: %v, want %v", got, want)
	}
	_, b := mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatBody)
	if got := path(decode(t, b), "choices", 0, "message", "content"); got != "Hello from the fake LLM." {
		t.Errorf("reply = %v", got)
	}
	hdr := anthropicHeaders()
	hdr[mocks.ScenarioHeader] = "tool"
	_, b = mustDo(t, s, http.MethodPost, "/v1/messages", hdr, messagesBody)
	if got := path(decode(t, b), "content", 0, "name"); got != "get_weather" {
		t.Errorf("tool: %s", b)
	}
}

func TestParseConfig_RejectsTyposAndBadValues(t *testing.T) {
	cases := map[string]string{
		`{"script":[{"stauts":503}]}`:              "stauts",
		`{"script":[{"status":700}]}`:              "status 700",
		`{"scenarios":{"x":[{"cut":"sideways"}]}}`: "sideways",
		`{"chaos":2}`:           "chaos",
		`{"default":"missing"}`: "missing",
		`{"script":[{"delay_ms":-5,"cut_after":-1}]}`:   "negative",
		`{"script":[{"tool_call":{"arguments":"{}"}}]}`: "without a name",
	}
	for in, want := range cases {
		if _, err := mocks.ParseConfig([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to mention %q", in, err, want)
		}
	}
	if _, err := mocks.ParseConfig([]byte(`{"default":"overloaded"}`)); err != nil {
		t.Errorf("builtin default: %v", err)
	}
}

func TestStep_JSONRoundTrip(t *testing.T) {
	steps := []mocks.Step{
		mocks.RateLimited(150*time.Millisecond).WithShouldRetry(false).WithHeader("X-A", "b"),
		mocks.CutStream(3).WithChunkDelay(20 * time.Millisecond).Times(2),
		mocks.StreamError(1, "overloaded_error").Always(),
		mocks.CallTool("f", `{"a":1}`),
		mocks.Stall(), mocks.ResetConnection(), mocks.Malformed(), mocks.QuotaExceeded(), mocks.Latency(time.Second),
		mocks.SlowFirstToken(1500 * time.Millisecond), mocks.StallAfter(2, time.Second), mocks.StallAfter(3, 0),
		mocks.MalformedAt(4), mocks.OmitTerminal(), mocks.TruncateStream(2).CountingContent(),
		mocks.RefuseAfter(2, "no").WithRefusalCategory("bio"), mocks.ContentFiltered(1), mocks.Refusal(""),
	}
	b, err := json.Marshal(steps)
	if err != nil {
		t.Fatal(err)
	}
	var back []mocks.Step
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(steps, back) {
		t.Errorf("round trip:\n got %+v\nwant %+v\njson %s", back, steps, b)
	}
}

func TestStep_String(t *testing.T) {
	cases := map[string]mocks.Step{
		"ok":                           mocks.OK(),
		"429 retry-after=150ms":        mocks.RateLimited(150 * time.Millisecond),
		"503 should-retry=false":       mocks.Status(503).WithShouldRetry(false),
		"ok cut=abort@2":               mocks.CutStream(2),
		"ok stream-error=api_error@1":  mocks.StreamError(1, "api_error"),
		"stall delay=1s":               mocks.Stall().WithDelay(time.Second),
		"tool:f":                       mocks.CallTool("f", ""),
		"429 quota":                    mocks.QuotaExceeded(),
		"ok first-token-delay=2s":      mocks.SlowFirstToken(2 * time.Second),
		"ok stall-after=3 for=forever": mocks.StallAfter(3, 0),
		"ok stall-after=1 for=50ms":    mocks.StallAfter(1, 50*time.Millisecond),
		"ok malformed-at=2":            mocks.MalformedAt(2),
		"ok omit-terminal":             mocks.OmitTerminal(),
		"ok cut=clean@4 in-content":    mocks.TruncateStream(4).CountingContent(),
		"refusal@2":                    mocks.RefuseAfter(2, "no"),
		"content-filter@0":             mocks.ContentFiltered(0),
	}
	for want, st := range cases {
		if got := st.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}

// Every fault a scenario file can name is the Step the code builds: the same step drives the
// same answer, from a file (and so from fakellm -scenario) as from Go.
func TestLoadConfig_FailoverScenarioFileMatchesTheCode(t *testing.T) {
	cfg, err := mocks.LoadConfig("testdata/scenario-failover.json")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]mocks.Step{
		"first-token-late":   mocks.SlowFirstToken(2 * time.Second).Always(),
		"stall-after-3":      mocks.StallAfter(3, 5*time.Second).Always(),
		"hang-after-3":       mocks.StallAfter(3, 0).Always(),
		"bad-event-2":        mocks.MalformedAt(2).Always(),
		"no-done":            mocks.OmitTerminal().Always(),
		"cut-after-5-words":  mocks.CutStream(5).CountingContent().WithText("one two three four five six seven").Always(),
		"exactly-3-words":    mocks.Reply("alpha beta gamma").Always(),
		"refused":            mocks.Refusal("I can't help with that.").WithRefusalCategory("cyber").Always(),
		"refused-mid-stream": mocks.RefuseAfter(2, "I must stop here.").Always(),
		"filtered":           mocks.ContentFiltered(2).Always(),
	}
	for name, st := range want {
		if got := cfg.Scenarios[name]; len(got) != 1 || !reflect.DeepEqual(got[0], st) {
			t.Errorf("%s: file %+v, code %+v", name, got, st)
		}
	}
	wantOutages := []mocks.Outage{
		{Duration: time.Minute, Model: "claude-opus-4-1", Step: mocks.Overloaded()},
		{Start: 2 * time.Minute, Duration: 30 * time.Second, Route: mocks.RouteChat, Step: mocks.Stall()},
	}
	if !reflect.DeepEqual(cfg.Outages, wantOutages) {
		t.Errorf("outages %+v", cfg.Outages)
	}
	if !reflect.DeepEqual(cfg.RejectPrefill, mocks.ModelSet{Models: []string{"claude-opus-4-6"}}) ||
		cfg.ContextWindows["gpt-4o-mini"] != 1000 || !reflect.DeepEqual(cfg.Models["gpt-4o"], []mocks.Step{mocks.Status(503).Times(2)}) {
		t.Errorf("config %+v", cfg)
	}

	clock := &fakeClock{now: outageEpoch}
	s := newServer(t, mocks.WithConfig(cfg), mocks.WithClock(clock.Now))
	got := []string{
		answer(t, s, "/v1/chat/completions", openAIHeaders(), chatFor("gpt-4o", "")),
		answer(t, s, "/v1/chat/completions", openAIHeaders(), chatFor("gpt-4o-mini", `"max_tokens":1000,`)),
		answer(t, s, "/v1/messages", anthropicHeaders(), messagesFor("claude-opus-4-1", "9")),
		answer(t, s, "/v1/messages", anthropicHeaders(), withModel(prefillMessages, "claude-opus-4-6")),
		answer(t, s, "/v1/messages", anthropicHeaders(), messagesFor("claude-haiku-4-5", "300")),
	}
	clock.Add(time.Minute)
	got = append(got, answer(t, s, "/v1/messages", anthropicHeaders(), messagesFor("claude-opus-4-1", "9")))
	if want := []string{"503", "400", "529", "400", "400", "one two three four"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	w := wires()[1]
	hdr := anthropicHeaders()
	hdr[mocks.ScenarioHeader] = "refused-mid-stream"
	w.header = hdr
	r, _, err := readStream(t, s, w, w.body)
	if err != nil || r.text != "one two" || r.finish != "refusal" || path(r.details, "explanation") != "I must stop here." {
		t.Errorf("refused-mid-stream: %+v, err %v", r, err)
	}
}

func TestParseConfig_RejectsBadFailoverKeys(t *testing.T) {
	cases := map[string]string{
		`{"script":[{"stall_for_ms":5}]}`:                                        "stall_for_ms without stall_after",
		`{"script":[{"count_content":true}]}`:                                    "count_content without cut",
		`{"script":[{"refuse_after":2}]}`:                                        "refuse_after without refuse",
		`{"script":[{"refuse_category":"bio"}]}`:                                 "refuse_category without refuse",
		`{"script":[{"malformed_at":-1,"stall_after":-2}]}`:                      "negative",
		`{"script":[{"first_token_delay_ms":-1}]}`:                               "first_token_delay_ms -1 is negative",
		`{"models":{"":[{"status":503}]}}`:                                       "empty model name",
		`{"models":{"m":[{"stauts":503}]}}`:                                      "stauts",
		`{"contextWindows":{"m":0}}`:                                             "not a positive number",
		`{"rejectPrefill":"yes"}`:                                                "true, false or a list",
		`{"outages":[{"durationMs":0,"step":{}}]}`:                               "not positive",
		`{"outages":[{"durationMs":5,"route":"/v2/x"}]}`:                         "route",
		`{"outages":[{"durationMs":5,"startMs":1,"at":"2026-01-01T00:00:00Z"}]}`: "both startMs and at",
		`{"outages":[{"durationMs":5,"stpe":{}}]}`:                               "stpe",
		`{"outages":[{"durationMs":5,"step":{"status":700}}]}`:                   "status 700",
	}
	for in, want := range cases {
		if _, err := mocks.ParseConfig([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to mention %q", in, err, want)
		}
	}
	cfg, err := mocks.ParseConfig([]byte(`{"rejectPrefill":true,"outages":[{"at":"2026-01-01T00:00:00Z","durationMs":1000}]}`))
	if err != nil || !cfg.RejectPrefill.All || !cfg.Outages[0].At.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("cfg %+v, err %v", cfg, err)
	}
}
