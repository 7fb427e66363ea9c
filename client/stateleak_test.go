package client_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
)

// The goal of issue 26: zero cases, in a randomized fallback test, of provider state sent to
// another provider. Thousands of random conversations (300 with -short) run through one
// client whose chain holds every wire — OpenAI's Responses API (three deployments, two of
// them on one endpoint with different keys), Azure's Responses API (two keys on one
// endpoint), chat completions (on OpenAI and on Azure), Anthropic (two deployments, one with
// adaptive thinking) — each deployment its own origin, over loopback HTTP to a fake that
// fails a third of the requests at random (statuses, resets, cut, truncated and malformed
// streams, 429s, slow answers that hedges race). Each conversation stores its answers or not
// (Store nil, true, false), asks for reasoning (summaries, encrypted content), calls tools,
// uses Anthropic's web search (server tool blocks), has the server compact it (compaction
// items) and sometimes sends it pruned, lives in a conversation a provider keeps, continues
// from stored answers (Previous), runs answers in background mode (polled, cancelled,
// streamed), streams with every rescue mode, hedges, and sends each turn to a random order of
// providers. When a call pinned to the provider holding its state fails, the caller replays
// the transcript it kept. It keeps the answers as they come — reasoning items, encrypted
// content, signed thinking, compaction items, provider blocks — and sends them back on the
// next turn, wherever the client sends it.
//
// Every request the fake received is then checked: each piece of provider state it carries
// (response, reasoning, compaction, conversation, output item and server tool IDs, encrypted
// reasoning, compaction and search content, thinking signatures; in the body, the path or
// the query) must have come, before the request, in an answer of the origin it reached. One
// rule is Anthropic's own: its signed thinking is readable by any Anthropic endpoint
// (Anthropic documents the signatures as valid across its platforms), and the wire sends it
// to every Anthropic origin (providers/state.go); it is counted apart, and is a leak anywhere
// else.
//
// The seed is STEADY_LEAK_SEED when set (any uint64), else 26; failures print it.
func TestStateLeak_RandomFallbackNeverSendsProviderStateToAnotherOrigin(t *testing.T) {
	seed := uint64(26)
	if s := os.Getenv("STEADY_LEAK_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("STEADY_LEAK_SEED %q: %v", s, err)
		}
		seed = v
	}
	conversations, workers, batch := 2000, 4, 100
	if testing.Short() {
		conversations = 300
	}
	d := newLabDriver(t, seed, 0.33)
	tally := newTally()
	for first := 0; first < conversations; first += batch {
		d.run(first, min(first+batch, conversations), workers)
		d.settle(t)
		d.lab.check(t, tally, d.held)
		d.forget()
	}
	t.Logf("seed %d, %d conversations, %d calls\n%s\noutcomes: %s", seed, conversations, d.calls, tally.summary(), d.outcomes())
	for _, f := range tally.leaks[:min(len(tally.leaks), 10)] {
		t.Errorf("leak: %s from %s reached %s (call %s, %s)", f.token, f.from, f.to, f.call, f.path)
	}
	for _, f := range tally.unknown[:min(len(tally.unknown), 10)] {
		t.Errorf("state no answer carried: %s at %s (call %s, %s)", f.token, f.to, f.call, f.path)
	}
	for _, msg := range d.unexpected[:min(len(d.unexpected), 10)] {
		t.Errorf("unexpected: %s", msg)
	}
	// The run must have given the filter something to do, and the state its way home.
	// (A stored answer's or a conversation's ID is never among them: a call that continues
	// from one is pinned.)
	exposed, own := []string{"encrypted", "rs-id", "signature", "cmp-id", "srvtoolu-id", "search-content"},
		[]string{"encrypted", "rs-id", "resp-id", "signature", "cmp-id", "conv-id", "srvtoolu-id", "search-content"}
	for _, kind := range exposed {
		if tally.exposedKinds[kind] == 0 || tally.exposed < conversations/4 {
			t.Errorf("too few requests went to an origin while the conversation held another's state (%s): %d %v", kind, tally.exposed, tally.exposedKinds)
		}
	}
	for _, kind := range own {
		if tally.ownState[kind] == 0 {
			t.Errorf("provider state (%s) never went back to its own origin: %v", kind, tally.ownState)
		}
	}
	if t.Failed() {
		t.Logf("seed %d (rerun with STEADY_LEAK_SEED=%d)", seed, seed)
	}
}

// The check catches a leak. Two Responses origins: an answer of the first, sent on to the
// second as the client sends it, leaves its reasoning behind (no finding); the same
// reasoning with its Origin forged to name the second, and a Previous forged the same way,
// are sent there by the wire — and the check finds both. (This is what the test above
// would find if a wire or the client forwarded state.)
func TestStateLeak_TheCheckFindsStateSentToAnotherOrigin(t *testing.T) {
	l := newLab(t, 1, 0, "L1", "L2")
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	a, err := l.openAIAt("a", "L1", "key-a", openai.OpenAI, openai.Responses, "gpt-5-mini")(hc)
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.openAIAt("b", "L2", "key-b", openai.OpenAI, openai.Responses, "gpt-5-mini")(hc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := labRequest("a question", nil)
	req.Store = new(bool) // nothing stored: the reasoning comes back encrypted
	first, err := a.Chat(ctx, req)
	if err != nil || len(first.Message.Thinking) != 1 || first.Message.Thinking[0].Encrypted == "" {
		t.Fatalf("%v %+v", err, first)
	}
	stored, err := a.Chat(ctx, labRequest("another question", nil))
	if err != nil || stored.Stored == nil {
		t.Fatalf("%v %+v", err, stored)
	}
	next := labRequest("and then?", append(req.Messages, first.Message))
	next.Store = req.Store
	if _, err := b.Chat(ctx, next); err != nil {
		t.Fatal(err)
	}
	tally := newTally()
	l.check(t, tally, nil)
	if len(tally.leaks) != 0 || tally.ownState["rs-id"] != 0 {
		t.Fatalf("the honest turn:\n%s", tally.summary())
	}

	forged := first.Message
	forged.Thinking = append([]providers.ThinkingBlock(nil), forged.Thinking...)
	forged.Thinking[0].Origin = b.(interface{ SharingScope() string }).SharingScope()
	next.Messages[len(next.Messages)-2] = forged
	if _, err := b.Chat(ctx, next); err != nil {
		t.Fatal(err)
	}
	prev := labRequest("and then?", nil)
	prev.Previous = &providers.StoredResponse{ID: stored.Stored.ID, Origin: forged.Thinking[0].Origin}
	if _, err := b.Chat(ctx, prev); err != nil {
		t.Fatal(err)
	}
	l.check(t, tally, nil)
	kinds := map[string]int{}
	for _, f := range tally.leaks {
		if !strings.HasPrefix(f.from, "L1|") || !strings.HasPrefix(f.to, "L2|") {
			t.Errorf("unexpected finding %+v", f)
		}
		kinds[tokenKind(f.token)]++
	}
	if kinds["rs-id"] != 1 || kinds["encrypted"] != 1 || kinds["resp-id"] != 1 || len(tally.leaks) != 3 {
		t.Fatalf("want the forged item, its content and the forged Previous found:\n%s\n%v", tally.summary(), tally.leaks)
	}
}

// labDriver runs the conversations of the lab through one client.
type labDriver struct {
	lab  *lab
	c    *client.Client
	seed uint64

	mu         sync.Mutex
	calls      int
	heldBy     map[string][]string // call → the state its request held
	outcome    map[string]int      // "ok", error kinds, and the paths the conversations took
	unexpected []string
}

// The lab's providers: name → its deployments' listeners (for a reader; the client is built
// in newLabDriver). Every deployment has its own key, so every one is its own origin.
var labChain = []string{"oai", "azr", "claude", "cc"}

func newLabDriver(t *testing.T, seed uint64, faultRate float64) *labDriver {
	l := newLab(t, seed, faultRate, "L1", "L2", "L3", "L4", "L5", "L6", "L7", "L8")
	o := labPolicy()
	c := newClient(t,
		client.WithDeployments("oai", o, client.StrategyRoundRobin,
			client.Deployment{Name: "a", Factory: l.openAIAt("oai", "L1", "key-oai-a", openai.OpenAI, openai.Responses, "gpt-5-mini")},
			client.Deployment{Name: "b", Factory: l.openAIAt("oai", "L2", "key-oai-b", openai.OpenAI, openai.Responses, "gpt-5-mini")},
			// The same endpoint as "a", another key: another origin.
			client.Deployment{Name: "a2", Factory: l.openAIAt("oai", "L1", "key-oai-a2", openai.OpenAI, openai.Responses, "gpt-5-mini")}),
		client.WithDeployments("azr", o, client.StrategyRoundRobin,
			client.Deployment{Name: "east", Factory: l.openAIAt("azr", "L4", "key-azr-east", openai.Azure, openai.Responses, "gpt-5-mini")},
			client.Deployment{Name: "east2", Factory: l.openAIAt("azr", "L4", "key-azr-east2", openai.Azure, openai.Responses, "gpt-5-mini")}),
		client.WithDeployments("claude", o, client.StrategyRoundRobin,
			client.Deployment{Name: "k1", Factory: l.anthropicAt("claude", "L6", "key-claude-1", "claude-haiku-4-5")},
			client.Deployment{Name: "k2", Factory: l.anthropicAt("claude", "L7", "key-claude-2", "claude-opus-4-7")}),
		// Chat completions, on OpenAI and on Azure.
		client.WithDeployments("cc", o, client.StrategyRoundRobin,
			client.Deployment{Name: "openai", Factory: l.openAIAt("cc", "L8", "key-cc", openai.OpenAI, openai.ChatCompletions, "gpt-4o-mini")},
			client.Deployment{Name: "azure", Factory: l.openAIAt("cc", "L5", "key-cc-azure", openai.Azure, openai.ChatCompletions, "gpt-4o-mini")}),
		client.WithFallback(labChain...))
	return &labDriver{lab: l, c: c, seed: seed, heldBy: map[string][]string{}, outcome: map[string]int{}}
}

// run runs the conversations [from, to) on workers goroutines.
func (d *labDriver) run(from, to, workers int) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				d.conversation(i)
			}
		}()
	}
	for i := from; i < to; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// settle waits until the fake has finished every request (hedges that lost, streams the
// client closed), so the journal and the lab's notes are complete.
func (d *labDriver) settle(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for d.lab.fake.Journal().InFlight() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the fake still serves %d requests", d.lab.fake.Journal().InFlight())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// held is the state the request of call held.
func (d *labDriver) held(call string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.heldBy[call]
}

// forget drops what the check of a batch needed.
func (d *labDriver) forget() {
	d.mu.Lock()
	defer d.mu.Unlock()
	clear(d.heldBy)
	d.lab.mu.Lock()
	clear(d.lab.draws)
	d.lab.mu.Unlock()
}

func (d *labDriver) count(what string) {
	d.mu.Lock()
	d.outcome[what]++
	d.mu.Unlock()
}

func (d *labDriver) unexpectedf(format string, args ...any) {
	d.mu.Lock()
	d.unexpected = append(d.unexpected, fmt.Sprintf(format, args...))
	d.mu.Unlock()
}

func (d *labDriver) outcomes() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var parts []string
	for k, n := range d.outcome {
		parts = append(parts, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// labTools is the one tool of the lab's conversations.
var labTools = []providers.Tool{{Name: "lookup", Description: "Looks a word up.",
	Parameters: []byte(`{"type":"object","properties":{"word":{"type":"string"}},"required":["word"]}`)}}

// labRequest is a request that asks for reasoning (a budget for Anthropic, an effort and a
// summary for OpenAI) with the transcript msgs and a new user message.
func labRequest(user string, msgs []providers.Message) *providers.ChatRequest {
	return &providers.ChatRequest{MaxTokens: 4096, Messages: append(append([]providers.Message(nil), msgs...),
		providers.Message{Role: providers.RoleUser, Content: user}),
		Reasoning: &providers.Reasoning{Effort: "low", BudgetTokens: 1024, Summary: "auto"}}
}

// labConv is one conversation: the transcript its caller keeps, the last stored answer, the
// conversation a provider keeps for it.
type labConv struct {
	id         int
	rng        *rand.Rand
	store      *bool
	tools      bool
	compactAt  int // CompactThreshold, 0 for none
	transcript []providers.Message
	last       *providers.StoredResponse // the last answer, when it was stored
	lastAt     int                       // len(transcript) just after it
	server     *providers.Conversation   // the conversation a provider keeps, nil for none
	serverAt   int                       // len(transcript) up to which it holds the transcript
}

// conversation runs conversation i: two to six turns.
func (d *labDriver) conversation(i int) {
	conv := &labConv{id: i, rng: rand.New(rand.NewPCG(d.seed, uint64(i)))}
	switch conv.rng.IntN(3) {
	case 1:
		conv.store = new(bool)
		*conv.store = true
	case 2:
		conv.store = new(bool)
	}
	if conv.rng.IntN(3) == 0 {
		conv.transcript = []providers.Message{{Role: providers.RoleSystem, Content: "Answer briefly."}}
	}
	if conv.rng.IntN(2) == 0 {
		conv.compactAt = 20 + conv.rng.IntN(60) // from the first or a later turn on
	}
	if conv.rng.IntN(5) == 0 {
		// A conversation kept by OpenAI or Azure (created on their first deployment).
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		server, err := d.c.NewConversation(ctx, []string{"oai", "azr"}[conv.rng.IntN(2)],
			client.WithHeader(labCallHeader, fmt.Sprintf("c%d.new", i)))
		cancel()
		if err == nil {
			conv.server = server
			d.count("conversation created")
		} else {
			d.count("conversation not created")
		}
	}
	for turn := range 2 + conv.rng.IntN(5) {
		d.turn(conv, turn)
	}
}
