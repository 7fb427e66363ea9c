package statuspage_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// seenWithin is the goal: a change shows in the browser within 2 s of happening.
const seenWithin = 2 * time.Second

// A real browser loads the page of a client whose provider (the fake server, over loopback)
// fails and recovers, and sees each change within 2 s of it happening: the circuit opens and
// closes (through half-open), a rate-limit pause appears and ends. The client runs on a manual
// clock, so the breaks and pauses end exactly when the test moves it; only the page's way to
// the browser runs in real time. The page's script runs under its Content-Security-Policy,
// which blocks any other script.
func TestBrowser_SeesCircuitAndPauseChangeWithin2s(t *testing.T) {
	path := findChromium(t)
	clock := backend.NewManualClock()
	fake := mocks.NewServer(mocks.WithReply("ok"))
	defer fake.Close()
	o := policy()
	o.CircuitBreakerDurationSeconds, o.CircuitBreakerMinDurationSeconds = 30, 30
	c := newClient(t, client.WithProvider("openai", o, openAIOn("openai", fake)), client.WithClock(clock))

	// When each change happened, on the wall clock, as the pipeline reports it.
	var mu sync.Mutex
	happened := map[string]time.Time{}
	stop := c.Watch(func(e resilience.Event) {
		var what string
		switch {
		case e.Type == resilience.EventBreakerStateChanged && e.To == resilience.CircuitOpen:
			what = "open"
		case e.Type == resilience.EventBreakerStateChanged && e.To == resilience.CircuitClosed:
			what = "closed"
		case e.Type == resilience.EventCooldownStarted:
			what = "pause"
		default:
			return
		}
		mu.Lock()
		happened[what] = time.Now()
		mu.Unlock()
	})
	defer stop()
	at := func(what string) time.Time {
		mu.Lock()
		defer mu.Unlock()
		at, ok := happened[what]
		if !ok {
			t.Fatalf("the pipeline never reported %s", what)
		}
		return at
	}

	page := newPage(t, c)
	srv := serve(t, page)
	if err := ask(c); err != nil {
		t.Fatal(err)
	}
	const route = "openai:gpt-4o-mini"

	b := launch(t, path)
	// Record any violation of the page's policy from the very start.
	b.call(b.session, "Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": `window.__violations=[];` +
		`document.addEventListener("securitypolicyviolation",function(e){window.__violations.push(e.violatedDirective)});`}, nil)
	b.navigate(srv.URL + "/debug/steady")
	// Starting a browser on a busy machine takes what it takes: a long limit for the first view.
	b.until("the live page", `document.getElementById("live").textContent==="live" && `+rowIs(route, "circuit", "closed"),
		60*time.Second)

	check := func(what, expr string, since time.Time) {
		t.Helper()
		seen := b.until(what, expr, 30*time.Second)
		took := seen.Sub(since)
		t.Logf("%s seen in the DOM %s after it happened", what, took.Round(time.Millisecond))
		if took > seenWithin {
			t.Errorf("%s took %s to show, more than %s", what, took, seenWithin)
		}
	}

	// The provider fails: two calls open the route's circuit. The fake is steered over its admin
	// API, as an operator rehearsing an outage would steer the fakellm command.
	admin := mocks.Admin(fake.URL())
	if err := admin.Script(context.Background(), mocks.Status(http.StatusServiceUnavailable).Times(2)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := ask(c); err == nil {
			t.Fatal("a failing provider served")
		}
	}
	check("the open circuit", rowIs(route, "circuit", "open")+` && /^\d+(\.\d)?s$/.test(`+countdownOf(route)+`)`, at("open"))
	// Its only model open, the provider itself reads open, not its host's closed circuit.
	check("the provider open", rowIs("openai", "circuit", "open")+` && `+summaryStarts("openai", "0 of 1 serving"), at("open"))

	// The break ends (the clock moves past it): the circuit lets a probe through, with no call
	// needed to show it; the provider serves again, and the probe closes it.
	clock.Advance(31 * time.Second)
	check("the half-open circuit", rowIs(route, "circuit", "half-open"), time.Now())
	// Probing is never serving: the provider reads probing until the probe succeeds.
	check("the provider probing", rowIs("openai", "circuit", "half-open")+` && `+summaryStarts("openai", "0 of 1 serving, 1 probing"),
		time.Now())
	if err := ask(c); err != nil {
		t.Fatal(err)
	}
	check("the closed circuit", rowIs(route, "circuit", "closed"), at("closed"))

	// A 429 asks for 30 s: the route pauses.
	if err := admin.Script(context.Background(), mocks.RateLimited(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := ask(c); err == nil {
		t.Fatal("a rate-limited call served")
	}
	check("the pause", rowIs(route, "pause", "on")+` && /^\d+(\.\d)?s$/.test(`+countdownOf(route)+`)`, at("pause"))

	// The pause ends when its 30 s are over.
	clock.Advance(31 * time.Second)
	ended := time.Now()
	if left := c.Pipeline("openai").Route("gpt-4o-mini").CoolingFor(); left != 0 {
		t.Fatalf("the pause has %s left after the clock passed its end", left)
	}
	check("the end of the pause", rowIs(route, "pause", "off"), ended)

	// The events are on the page, and the policy was never violated by the page itself.
	raw, err := b.eval(`document.getElementById("events").textContent`)
	var events string
	if err == nil {
		err = json.Unmarshal([]byte(raw), &events)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"closed → open", "half-open → closed", "paused for 30s"} {
		if !strings.Contains(events, want) {
			t.Errorf("the events lack %q: %s", want, events)
		}
	}
	if v, err := b.eval(`JSON.stringify(window.__violations)`); err != nil || v != `"[]"` {
		t.Errorf("the page violated its Content-Security-Policy: %s %v", v, err)
	}
	// The policy is enforced: a script that is not the page's own does not run, and the
	// browser reports it (so the check above could see a violation).
	if v, err := b.eval(`(function(){var s=document.createElement("script");s.textContent="window.__ran=1";` +
		`document.body.appendChild(s);return window.__ran===undefined;})()`); err != nil || v != "true" {
		t.Errorf("an injected inline script ran despite the page's policy: %s %v", v, err)
	}
	b.until("the violation reported", `window.__violations.length===1`, 30*time.Second)
}

// summaryStarts is a script expression: provider's heading summary starts with text.
func summaryStarts(provider, text string) string {
	return `(function(){var e=document.querySelector('h2[data-provider="` + provider + `"] small');` +
		`return !!e && e.textContent.indexOf("` + text + `")===0})()`
}

// A real browser shows the client's budgets and follows them within 2 s: a tenant's first
// spend, its crossing of the warn tier (its budget's status turning warn), a refusal, a budget
// in shadow mode that would warn and refuse, and the end of the hour, when every key starts
// again; the windows' ends are counted down, in days for a month. The client runs on a manual
// clock, so the hour ends exactly when the test moves it.
func TestBrowser_SeesBudgetsChangeWithin2s(t *testing.T) {
	path := findChromium(t)
	clock := backend.NewManualClock() // 08:00 UTC on January 15th
	fake := mocks.NewServer(mocks.WithReply("ok"))
	defer fake.Close()
	monthly := cost.Budget{Name: "monthly", Window: cost.Month, Limit: providers.Unit}
	c := newClient(t, client.WithProvider("openai", policy(), openAIOn("openai", fake)), client.WithPrices(tokenPrices(t)),
		client.WithBudgets(cost.LedgerOptions{}, append(budgets(), monthly)...), client.WithClock(clock))
	srv := serve(t, newPage(t, c))

	b := launch(t, path)
	b.call(b.session, "Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": `window.__violations=[];` +
		`document.addEventListener("securitypolicyviolation",function(e){window.__violations.push(e.violatedDirective)});`}, nil)
	b.navigate(srv.URL + "/debug/steady")
	b.until("the live page with its budgets", `document.getElementById("live").textContent==="live" && `+
		`/No key has spent/.test(`+budgetText("tenants")+`) && /shadow/.test(`+budgetText("trial")+`)`, 60*time.Second)
	// The hour ends in an hour, the month in 16 days and 16 hours: counted down by the script.
	b.until("the windows' ends counted down", `/^(59m\d\ds|1\.0h)$/.test(`+budgetEnds("tenants")+`) && `+
		budgetEnds("monthly")+`==="16.7d"`, 30*time.Second)

	check := func(what, expr string, since time.Time) {
		t.Helper()
		seen := b.until(what, expr, 30*time.Second)
		took := seen.Sub(since)
		t.Logf("%s seen in the DOM %s after it happened", what, took.Round(time.Millisecond))
		if took > seenWithin {
			t.Errorf("%s took %s to show, more than %s", what, took, seenWithin)
		}
	}
	call := func(wantRefused bool) time.Time {
		t.Helper()
		err := spend(c, "acme")
		if (err != nil) != wantRefused {
			t.Fatalf("acme's call: %v", err)
		}
		return time.Now()
	}
	check("acme's first spend", budgetRowIs("tenants", "acme", "tier", "allow")+` && `+
		budgetRowIs("trial", "acme", "tier", "warn")+` && /would warn/.test(`+budgetText("trial")+`)`, call(false))
	check("acme past the warn tier", budgetRowIs("tenants", "acme", "tier", "warn")+` && `+
		`document.querySelector('h3[data-budget="tenants"]').getAttribute("data-status")==="warn" && `+
		budgetRowIs("trial", "acme", "refused", "yes"), call(false))
	check("acme refused", budgetRowIs("tenants", "acme", "refused", "yes")+` && /refused a call/.test(`+budgetText("tenants")+`)`,
		call(true))

	// The hour ends: the hourly budgets start again; the month goes on.
	clock.Advance(time.Hour)
	check("the next hour", `/No key has spent/.test(`+budgetText("tenants")+`) && /No key has spent/.test(`+budgetText("trial")+
		`) && `+budgetRowIs("monthly", "", "tier", "allow"), time.Now())
	if v, err := b.eval(`JSON.stringify(window.__violations)`); err != nil || v != `"[]"` {
		t.Errorf("the page violated its Content-Security-Policy: %s %v", v, err)
	}
}
