package client_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// The lab of the no-state-leak goal (stateleak_test.go): one fake server behind several
// loopback listeners, each listener an endpoint and each API key on it an origin, as the
// providers see them (a sharing scope is a keyed hash of the endpoint and the key). One fake,
// so every ID it hands out is unique across all origins; a handler in front of it names the
// origin of each request in a header the fake journals, draws its fault, and notes every piece
// of provider state in each answer — before the client can read it — with the origin it came
// from. Every request any origin received is then checked against those notes.

// Headers the lab adds: the origin a request reached (set by the lab's handler, journaled by
// the fake) and the call a request belongs to (set by the caller with client.WithHeader).
const (
	labOriginHeader = "X-Lab-Origin"
	labCallHeader   = "X-Lab-Call"
	labTickHeader   = "X-Lab-Tick" // the lab's clock when the request arrived
)

// The wire families of the origins, for the one rule that tells them apart: Anthropic's
// signed thinking is Anthropic's platform-wide state (see stateleak_test.go).
const (
	familyResponses = "responses"
	familyChat      = "chat"
	familyAnthropic = "anthropic"
)

// labFaults are the faults an origin draws for a request the lab decides to fail: statuses,
// broken and cut streams, malformed answers, slow answers (which the hedges race).
var labFaults = []string{"unavailable", "bad-gateway", "overloaded", "server-error", "reset", "cut-stream",
	"truncated", "stream-error", "malformed", "malformed-mid-stream", "cut-after-content", "lab-limited",
	"lab-slow", "lab-slow-token"}

// labOrigin is one origin: an endpoint (a listener) and a key.
type labOrigin struct {
	label  string // "<listener>|<key>", as the lab's handler names it
	family string
}

// lab is the fake, its listeners and its notes.
type lab struct {
	seed      uint64
	faultRate float64
	fake      *mocks.Server
	listeners map[string]*httptest.Server
	origins   map[string]labOrigin // by label

	// clock orders what the lab sees: each request's arrival and each write of an answer.
	clock atomic.Int64

	mu sync.Mutex
	// ledger holds, for each state token, the origins whose answers carried it and the tick
	// of the first time each did. An origin may carry a token another carried first (a fake
	// whose blocks depend on the question alone, a hedge), so a token is an origin's own
	// once that origin carried it — and not before: an answer that echoes what a request
	// leaked does not excuse the request.
	ledger map[string]map[string]int64
	draws  map[string]int // call and origin → requests drawn so far
}

// newLab starts the fake and one listener per name in listeners.
func newLab(t *testing.T, seed uint64, faultRate float64, listeners ...string) *lab {
	l := &lab{seed: seed, faultRate: faultRate, listeners: map[string]*httptest.Server{}, origins: map[string]labOrigin{},
		ledger: map[string]map[string]int64{}, draws: map[string]int{}}
	l.fake = mocks.NewServer(
		mocks.WithScenario("lab-limited", mocks.RateLimited(20*time.Millisecond).Always()),
		mocks.WithScenario("lab-slow", mocks.Latency(25*time.Millisecond).Always()),
		mocks.WithScenario("lab-slow-token", mocks.SlowFirstToken(25*time.Millisecond).Always()))
	t.Cleanup(l.fake.Close)
	for _, name := range listeners {
		ts := httptest.NewServer(l.handler(name))
		t.Cleanup(ts.Close)
		l.listeners[name] = ts
	}
	return l
}

// origin registers the origin of key on listener and returns its base URL.
func (l *lab) origin(listener, key, family string) string {
	label := listener + "|" + key
	l.origins[label] = labOrigin{label: label, family: family}
	return l.listeners[listener].URL
}

// handler serves the fake on listener: it names the request's origin, draws its fault, and
// notes the state in the answer as it is written.
func (l *lab) handler(listener string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		label := listener + "|" + requestKey(r)
		r.Header.Set(labOriginHeader, label)
		r.Header.Set(labTickHeader, strconv.FormatInt(l.clock.Add(1), 10))
		if fault := l.fault(r.Header.Get(labCallHeader), label); fault != "" {
			r.Header.Set(mocks.ScenarioHeader, fault)
		}
		l.fake.ServeHTTP(&notingWriter{ResponseWriter: w, lab: l, label: label}, r)
	})
}

// requestKey is the API key a request carries, in whichever header its wire puts it.
func requestKey(r *http.Request) string {
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return k
	}
	if k := r.Header.Get("Api-Key"); k != "" {
		return k
	}
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

// fault draws the fault of the n-th request of a call at an origin ("" for none), from the
// seed, the call, the origin and n: the same run of calls draws the same faults.
func (l *lab) fault(call, label string) string {
	l.mu.Lock()
	key := call + "\x00" + label
	n := l.draws[key]
	l.draws[key] = n + 1
	l.mu.Unlock()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], l.seed)
	sum := sha256.Sum256([]byte(fmt.Sprintf("%x|%s|%d", b, key, n)))
	u := float64(binary.LittleEndian.Uint64(sum[:8])>>11) / (1 << 53)
	if u >= l.faultRate {
		return ""
	}
	return labFaults[binary.LittleEndian.Uint64(sum[8:16])%uint64(len(labFaults))]
}

// produced notes the state tokens in p, written by the origin label now.
func (l *lab) produced(label string, p []byte) {
	if !mayHoldState(p) {
		return
	}
	tick := l.clock.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	scanState(p, func(tok []byte) {
		by := l.ledger[string(tok)]
		if by == nil {
			by = map[string]int64{}
			l.ledger[string(tok)] = by
		}
		if _, ok := by[label]; !ok {
			by[label] = tick
		}
	})
}

// producers returns the origins whose answers carried tok before tick, the first of them
// first (ties by name).
func (l *lab) producers(tok string, tick int64) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for o, at := range l.ledger[tok] {
		if at < tick {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		ai, aj := l.ledger[tok][out[i]], l.ledger[tok][out[j]]
		return ai < aj || ai == aj && out[i] < out[j]
	})
	return out
}

// notingWriter notes the state in what the fake writes before the client can read it. It
// keeps the tail of the last write, so a token split across two writes is noted too.
type notingWriter struct {
	http.ResponseWriter
	lab   *lab
	label string
	tail  []byte
}

func (w *notingWriter) Write(p []byte) (int, error) {
	joined := append(w.tail, p...)
	w.lab.produced(w.label, joined)
	w.tail = append(w.tail[:0], joined[max(0, len(joined)-256):]...)
	return w.ResponseWriter.Write(p)
}

func (w *notingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *notingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// labPolicy fails fast: one retry, short breaks, a short stream idle limit, no pacing.
func labPolicy() resilience.Options {
	o := policy()
	o.RetryCount = 1
	o.CircuitBreakerDurationSeconds = 0.05
	o.CircuitBreakerMinDurationSeconds = 0
	o.StreamIdleTimeoutSeconds = 2
	o.PaceFromHeaders = false // the fake's rate-limit headers would slow the calls down
	return o
}

// responsesAt builds an OpenAI-dialect (or Azure) provider on the Responses API, or on chat
// completions, for one origin of the lab.
func (l *lab) openAIAt(name, listener, key string, dialect openai.Dialect, api openai.API, model string) client.ProviderFactory {
	family := familyResponses
	if api == openai.ChatCompletions {
		family = familyChat
	}
	base := l.origin(listener, key, family)
	if dialect != openai.Azure {
		base += "/v1"
	}
	return func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: name, Dialect: dialect, API: api, BaseURL: base, APIKey: key, HTTPClient: hc, Model: model})
	}
}

// anthropicAt builds an Anthropic provider for one origin of the lab.
func (l *lab) anthropicAt(name, listener, key, model string) client.ProviderFactory {
	base := l.origin(listener, key, familyAnthropic)
	return func(hc *http.Client) (providers.Provider, error) {
		return anthropic.New(anthropic.Config{Name: name, BaseURL: base, APIKey: key, HTTPClient: hc, Model: model})
	}
}

// labFinding is a piece of state found at an origin that did not produce it.
type labFinding struct {
	token, from, to, call, path string
}

// labTally is what the check of the journal found.
type labTally struct {
	requests     int            // requests checked
	withState    int            // requests carrying some provider state
	ownState     map[string]int // state tokens sent back to their own origin, by kind
	exposed      int            // requests sent while their conversation held another origin's state
	exposedKinds map[string]int // the kinds of foreign state those conversations held
	leaks        []labFinding   // state at an origin that did not produce it: must stay empty
	anthropic    int            // Anthropic signed thinking at another Anthropic origin (allowed)
	unknown      []labFinding   // state the lab never saw an answer carry: must stay empty
	lastSeq      int            // the last journal entry checked
}

func newTally() *labTally {
	return &labTally{ownState: map[string]int{}, exposedKinds: map[string]int{}}
}

// check reads the journal entries after tally.lastSeq and checks every one: each state token
// it carries (in its body, path or query) must come from the origin it reached. held gives,
// by call, the state the conversation held when the call was made. It fails when the
// journal dropped an entry before it was checked.
func (l *lab) check(t *testing.T, tally *labTally, held func(call string) []string) {
	t.Helper()
	for _, e := range l.fake.Journal().Requests() {
		if e.Seq <= tally.lastSeq {
			continue
		}
		if e.Seq != tally.lastSeq+1 {
			t.Fatalf("the journal dropped requests %d to %d before they were checked", tally.lastSeq+1, e.Seq-1)
		}
		if e.BodyTruncated {
			t.Fatalf("request %d: the journal cut its body", e.Seq)
		}
		tally.lastSeq = e.Seq
		l.checkOne(tally, e, held)
	}
}

func (l *lab) checkOne(tally *labTally, e mocks.Request, held func(call string) []string) {
	to := e.Header.Get(labOriginHeader)
	call := e.Header.Get(labCallHeader)
	tick, _ := strconv.ParseInt(e.Header.Get(labTickHeader), 10, 64)
	tally.requests++
	toks := stateIn(e.Path + "?" + e.Query + "\n" + string(e.Body))
	if len(toks) > 0 {
		tally.withState++
	}
	for _, tok := range toks {
		from := l.producers(tok, tick)
		switch {
		case len(from) == 0:
			tally.unknown = append(tally.unknown, labFinding{token: tok, to: to, call: call, path: e.Path})
		case slices.Contains(from, to):
			tally.ownState[tokenKind(tok)]++
		case l.anthropicSignature(tok, from, to):
			tally.anthropic++
		default:
			tally.leaks = append(tally.leaks, labFinding{token: tok, from: from[0], to: to, call: call, path: e.Path})
		}
	}
	if call == "" || held == nil {
		return
	}
	foreign := map[string]bool{}
	for _, tok := range held(call) {
		if from := l.producers(tok, tick); len(from) > 0 && !slices.Contains(from, to) && !l.anthropicSignature(tok, from, to) {
			foreign[tokenKind(tok)] = true
		}
	}
	if len(foreign) > 0 {
		tally.exposed++
		for k := range foreign {
			tally.exposedKinds[k]++
		}
	}
}

// anthropicSignature reports whether tok is Anthropic's signed thinking, from an Anthropic
// origin to another: state every Anthropic endpoint reads (see stateleak_test.go).
func (l *lab) anthropicSignature(tok string, from []string, to string) bool {
	if tokenKind(tok) != "signature" || l.origins[to].family != familyAnthropic {
		return false
	}
	for _, o := range from {
		if l.origins[o].family == familyAnthropic {
			return true
		}
	}
	return false
}

// summary describes the tally in one line per fact.
func (tally *labTally) summary() string {
	kinds := func(m map[string]int) string {
		var parts []string
		for k, n := range m {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
		sort.Strings(parts)
		return strings.Join(parts, ", ")
	}
	return fmt.Sprintf("requests checked: %d (%d carrying provider state)\n"+
		"state sent back to its own origin: %s\n"+
		"requests sent while the conversation held another origin's state: %d (%s)\n"+
		"leak cases (state at an origin that did not produce it): %d\n"+
		"state no answer carried: %d\n"+
		"Anthropic signed thinking at another Anthropic origin (allowed): %d",
		tally.requests, tally.withState, kinds(tally.ownState), tally.exposed, kinds(tally.exposedKinds),
		len(tally.leaks), len(tally.unknown), tally.anthropic)
}
