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
		"ok":                          mocks.OK(),
		"429 retry-after=150ms":       mocks.RateLimited(150 * time.Millisecond),
		"503 should-retry=false":      mocks.Status(503).WithShouldRetry(false),
		"ok cut=abort@2":              mocks.CutStream(2),
		"ok stream-error=api_error@1": mocks.StreamError(1, "api_error"),
		"stall delay=1s":              mocks.Stall().WithDelay(time.Second),
		"tool:f":                      mocks.CallTool("f", ""),
		"429 quota":                   mocks.QuotaExceeded(),
	}
	for want, st := range cases {
		if got := st.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}
