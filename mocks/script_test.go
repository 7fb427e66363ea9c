package mocks_test

import (
	"context"
	"net/http"
	"reflect"
	"testing"

	"github.com/steadyllm/steady/mocks"
)

// statuses makes n chat calls with the given scenario header ("" for none) and returns their
// statuses (0 for a call that got no response).
func statuses(t *testing.T, s *mocks.Server, n int, scenario string) []int {
	t.Helper()
	hdr := openAIHeaders()
	if scenario != "" {
		hdr[mocks.ScenarioHeader] = scenario
	}
	var out []int
	for range n {
		res, err := do(t, context.Background(), s, http.MethodPost, "/v1/chat/completions", hdr, chatBody)
		if err != nil {
			out = append(out, 0)
			continue
		}
		_, _ = readAllClose(res)
		out = append(out, res.StatusCode)
	}
	return out
}

func TestScript_StepsInOrderThenOK(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Status(503).Times(2), mocks.RateLimited(0), mocks.OK(), mocks.Status(500)))
	if got, want := statuses(t, s, 6, ""), []int{503, 503, 429, 200, 500, 200}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	s.Script(mocks.Status(502).Always())
	if got, want := statuses(t, s, 3, ""), []int{502, 502, 502}; !reflect.DeepEqual(got, want) {
		t.Errorf("after Script: got %v, want %v", got, want)
	}
}

func TestScenario_SelectedByHeaderWithItsOwnCursor(t *testing.T) {
	s := newServer(t, mocks.WithScenario("flaky", mocks.Status(503), mocks.Status(504)), mocks.WithScript(mocks.Status(500)))
	if got := statuses(t, s, 1, "flaky"); got[0] != 503 {
		t.Errorf("first flaky call: %v", got)
	}
	if got := statuses(t, s, 1, ""); got[0] != 500 {
		t.Errorf("default script call: %v", got)
	}
	if got, want := statuses(t, s, 2, "flaky"), []int{504, 200}; !reflect.DeepEqual(got, want) {
		t.Errorf("flaky: %v, want %v", got, want)
	}
	s.Scenario("flaky", mocks.Status(502))
	if got := statuses(t, s, 1, "flaky"); got[0] != 502 {
		t.Errorf("redefined flaky: %v", got)
	}
}

func TestScenario_BuiltinsAndUnknownNames(t *testing.T) {
	s := newServer(t)
	for name, want := range map[string]int{"overloaded": 529, "unavailable": 503, "quota-exceeded": 429, "ok": 200, "reset": 0} {
		if got := statuses(t, s, 2, name); got[0] != want || got[1] != want {
			t.Errorf("%s: %v, want %d twice", name, got, want)
		}
	}
	if got := statuses(t, s, 1, "no-such-scenario"); got[0] != 400 {
		t.Errorf("unknown scenario: %v", got)
	}
	if len(mocks.BuiltinScenarios()) < 10 {
		t.Errorf("builtins: %v", mocks.BuiltinScenarios())
	}
}

func TestUseScenario_AnswersCallsThatNameNone(t *testing.T) {
	s := newServer(t, mocks.WithDefaultScenario("bad-gateway"))
	if got := statuses(t, s, 2, ""); got[0] != 502 || got[1] != 502 {
		t.Errorf("got %v", got)
	}
	if err := s.UseScenario("nope"); err == nil {
		t.Error("UseScenario accepted an unknown name")
	}
	s.Scenario("two", mocks.Status(500))
	if err := s.UseScenario("two"); err != nil {
		t.Fatal(err)
	}
	if got, want := statuses(t, s, 2, ""), []int{500, 200}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestChaos_IsDeterministicForASeed(t *testing.T) {
	run := func(seed int64) []string {
		s := newServer(t, mocks.WithChaos(seed, 0.5))
		statuses(t, s, 40, "")
		var steps []string
		for _, r := range s.Journal().Requests() {
			steps = append(steps, r.Scenario+":"+r.Step)
		}
		return steps
	}
	a, b, c := run(7), run(7), run(8)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("same seed, different faults:\n%v\n%v", a, b)
	}
	if reflect.DeepEqual(a, c) {
		t.Errorf("seeds 7 and 8 gave the same 40 faults")
	}
	faults := 0
	for _, st := range a {
		if st != ":ok" {
			faults++
		}
	}
	if faults == 0 || faults == len(a) {
		t.Errorf("rate 0.5 gave %d faults in %d calls", faults, len(a))
	}
}

func TestChaos_OffAndFull(t *testing.T) {
	s := newServer(t, mocks.WithChaos(1, 1))
	statuses(t, s, 10, "")
	for _, r := range s.Journal().Requests() {
		if r.Scenario != "chaos" {
			t.Errorf("rate 1: call %d not chaos: %q", r.Seq, r.Step)
		}
	}
	s.Chaos(1, 0)
	if got := statuses(t, s, 5, ""); !reflect.DeepEqual(got, []int{200, 200, 200, 200, 200}) {
		t.Errorf("chaos off: %v", got)
	}
}
