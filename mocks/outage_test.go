package mocks_test

import (
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/mocks"
)

var outageEpoch = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// answer is what one call got: its status, and its text when it succeeded.
func answer(t *testing.T, s *mocks.Server, p string, hdr map[string]string, body string) string {
	t.Helper()
	res, b := mustDo(t, s, http.MethodPost, p, hdr, body)
	if res.StatusCode != 200 {
		return strconv.Itoa(res.StatusCode)
	}
	v := decode(t, b)
	if text, ok := path(v, "choices", 0, "message", "content").(string); ok {
		return text
	}
	text, _ := path(v, "content", 0, "text").(string)
	return text
}

func TestOutage_FailsForItsWindowThenTheScriptGoesOnWhereItWas(t *testing.T) {
	clock := &fakeClock{now: outageEpoch}
	s := newServer(t, mocks.WithClock(clock.Now),
		mocks.WithScript(mocks.Reply("first"), mocks.Reply("second")),
		mocks.WithOutage(mocks.Outage{Start: time.Second, Duration: 2 * time.Second, Step: mocks.Status(503)}))
	chat := func() string { return answer(t, s, "/v1/chat/completions", openAIHeaders(), chatFor("gpt-4o", "")) }
	var got []string
	got = append(got, chat())         // t=0
	clock.Add(time.Second)            // t=1s: the outage begins
	got = append(got, chat(), chat()) // every call in the window fails, whatever its Repeat
	clock.Add(2*time.Second - 1)      // still inside
	got = append(got, chat())         //
	clock.Add(1)                      // t=3s: over
	got = append(got, chat(), chat()) // the script resumes; then normal replies
	want := []string{"first", "503", "503", "503", "second", "one two three four"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if r := s.Journal().Requests(); r[1].Scenario != "outage[0]" || r[1].Step != "503" {
		t.Errorf("journal: %q %q", r[1].Scenario, r[1].Step)
	}
}

func TestOutage_OneModelOrOneRouteGoesDownTheOthersServe(t *testing.T) {
	clock := &fakeClock{now: outageEpoch}
	s := newServer(t, mocks.WithClock(clock.Now), mocks.WithOutage(
		mocks.Outage{Duration: time.Minute, Model: "gpt-4o", Step: mocks.Status(503)},
		mocks.Outage{Duration: time.Minute, Route: mocks.RouteMessages, Step: mocks.Overloaded()},
		mocks.Outage{Duration: time.Minute, Route: mocks.RouteChat, Model: "gpt-4o-mini", Step: mocks.Status(500)},
	))
	got := []string{
		answer(t, s, "/v1/chat/completions", openAIHeaders(), chatFor("gpt-4o", "")),
		answer(t, s, "/v1/chat/completions", openAIHeaders(), chatFor("gpt-4.1", "")),
		answer(t, s, "/v1/messages", anthropicHeaders(), messagesFor("claude-sonnet-4-5", "9")),
		answer(t, s, "/v1/chat/completions", openAIHeaders(), chatFor("gpt-4o-mini", "")),
		// The same model on another route (Azure) is not the route of the third outage.
		answer(t, s, "/openai/deployments/gpt-4o-mini/chat/completions?api-version=1", map[string]string{"Api-Key": "k"}, chatFor("x", "")),
	}
	want := []string{"503", "one two three four", "529", "500", "one two three four"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	clock.Add(time.Minute)
	if got := answer(t, s, "/v1/chat/completions", openAIHeaders(), chatFor("gpt-4o", "")); got != "one two three four" {
		t.Errorf("after the outages: %q", got)
	}
}

func TestOutage_FlapsDownUpDownOnAnExplicitSchedule(t *testing.T) {
	clock := &fakeClock{now: outageEpoch}
	s := newServer(t, mocks.WithClock(clock.Now),
		mocks.WithOutage(mocks.Outage{At: outageEpoch.Add(10 * time.Second), Duration: 5 * time.Second, Step: mocks.Status(502)}),
		mocks.WithOutage(mocks.Outage{Start: 30 * time.Second, Duration: 5 * time.Second, Step: mocks.Status(504)},
			mocks.Outage{Start: 30 * time.Second, Duration: time.Hour, Step: mocks.Status(500)}))
	var got []string
	for _, at := range []time.Duration{0, 10 * time.Second, 15 * time.Second, 32 * time.Second, 35 * time.Second} {
		clock.Add(outageEpoch.Add(at).Sub(clock.Now()))
		got = append(got, answer(t, s, "/v1/chat/completions", openAIHeaders(), chatFor("gpt-4o", "")))
	}
	// Overlapping outages: the first scheduled wins while it lasts.
	want := []string{"one two three four", "502", "one two three four", "504", "500"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	s.Outages() // cleared
	if got := answer(t, s, "/v1/chat/completions", openAIHeaders(), chatFor("gpt-4o", "")); got != "one two three four" {
		t.Errorf("after Outages(): %q", got)
	}
}

func TestOutage_TheScenarioHeaderWinsOverAnOutage(t *testing.T) {
	clock := &fakeClock{now: outageEpoch}
	s := newServer(t, mocks.WithClock(clock.Now),
		mocks.WithOutage(mocks.Outage{Duration: time.Hour, Step: mocks.Status(503)}),
		mocks.WithModelScript("gpt-4o", mocks.Status(429)))
	hdr := openAIHeaders()
	hdr[mocks.ScenarioHeader] = "ok"
	if got := answer(t, s, "/v1/chat/completions", hdr, chatFor("gpt-4o", "")); got != "one two three four" {
		t.Errorf("with the header: %q", got)
	}
	if got := answer(t, s, "/v1/chat/completions", openAIHeaders(), chatFor("gpt-4o", "")); got != "503" {
		t.Errorf("the outage before the model script: %q", got)
	}
	s.Outages()
	if got := answer(t, s, "/v1/chat/completions", openAIHeaders(), chatFor("gpt-4o", "")); got != "429" {
		t.Errorf("the model script, untouched by the outage: %q", got)
	}
}

func TestOutage_BadOutagesPanic(t *testing.T) {
	for name, o := range map[string]mocks.Outage{
		"no duration":   {Step: mocks.Status(503)},
		"unknown route": {Duration: time.Second, Route: "/v2/nope"},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			s := mocks.NewServer(mocks.WithOutage(o))
			s.Close()
		}()
	}
	many := make([]mocks.Outage, mocks.MaxOutages+1)
	for i := range many {
		many[i] = mocks.Outage{Duration: time.Second}
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "outages") {
			t.Errorf("too many outages: %v", r)
		}
	}()
	s := mocks.NewServer(mocks.WithOutage(many...))
	s.Close()
}
