package client

import (
	"fmt"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// Continuing a stream (StreamRescue "continue"): a stream that fails after content goes on
// along what is left of its chain, as a restart does (rescue.go), but the route that takes over
// is asked for the rest of the answer, not the whole of it: the request carries the text
// delivered so far as the assistant's beginning of the answer — an assistant prefill
// (providers.ChatRequest.Prefill), or a continuation prompt after it where the route declares
// that — and the stream delivers only what follows, after a delta marked Continued. A route
// that can do neither is skipped: it is never sent the partial answer. A tool call whose
// arguments were cut is asked for again and delivered whole, its first fragment marked
// Restart, never spliced. Where no route can continue, the stream ends with the failure and
// its Partial, as without rescue.

// Continuation is how a route continues an answer another route began.
type Continuation string

// The ways to continue.
const (
	// ContinueDefault leaves it to the provider: an assistant prefill where it declares one
	// (providers.Prefiller: Anthropic's models before 4.6 without extended thinking, an
	// OpenAI-compatible server with openai.Config.Prefill), else none.
	ContinueDefault Continuation = ""
	// ContinuePrefill sends the answer so far as a final assistant message to continue
	// (providers.ChatRequest.Prefill); the provider refuses it before sending if it has no
	// prefill of its own.
	ContinuePrefill Continuation = "prefill"
	// ContinuePrompt sends the answer so far as an assistant message followed by a user
	// message, ContinuationPrompt: for a model that takes no prefill but follows the
	// instruction. What it answers is delivered as the continuation; how faithfully it
	// continues is the model's.
	ContinuePrompt Continuation = "prompt"
	// ContinueNone: the route never continues an answer, and is never sent one.
	ContinueNone Continuation = "none"
)

// ContinuationPrompt is the user message a route that continues by prompt (ContinuePrompt)
// gets after the answer so far.
const ContinuationPrompt = "Your answer above was cut off. Continue it from exactly where it stops: " +
	"do not repeat any of it, and write nothing before the continuation."

// maxCarry bounds the answer so far that a continuation sends again (as the prefill): 64 KiB
// of text, about 16,000 tokens, is the most a rescue pays for in input. Past it the stream
// ends with its failure and Partial, as where no route can continue.
const maxCarry = 64 << 10

// continuations is what WithContinuation declares for one provider.
type continuations struct {
	all     Continuation
	byModel map[string]Continuation
}

// WithContinuation declares how provider name's routes continue an answer another route began
// (StreamRescue "continue"): way for every model, byModel for the models that differ (keyed
// by the model the route is asked for). ContinueDefault leaves it to the provider
// (providers.Prefiller); ContinueNone keeps every partial answer away from it.
func WithContinuation(name string, way Continuation, byModel map[string]Continuation) Option {
	return func(b *builder) error {
		if b.spec(name) == nil {
			return fmt.Errorf("client: WithContinuation: unknown provider %q", name)
		}
		if err := checkContinuation(way); err != nil {
			return fmt.Errorf("client: WithContinuation(%q): %w", name, err)
		}
		cs := continuations{all: way, byModel: map[string]Continuation{}}
		for m, w := range byModel {
			if err := checkContinuation(w); err != nil {
				return fmt.Errorf("client: WithContinuation(%q): model %q: %w", name, m, err)
			}
			cs.byModel[m] = w
		}
		if b.c.continuations == nil {
			b.c.continuations = map[string]continuations{}
		}
		b.c.continuations[name] = cs
		return nil
	}
}

func checkContinuation(w Continuation) error {
	switch w {
	case ContinueDefault, ContinuePrefill, ContinuePrompt, ContinueNone:
		return nil
	}
	return fmt.Errorf("continuation %q: must be %q, %q, %q or empty", w, ContinuePrefill, ContinuePrompt, ContinueNone)
}

// continuesBy returns how route r continues an answer to req: what WithContinuation declares
// for it, else ContinuePrefill when its provider says it takes req's prefill, else
// ContinueNone.
func (c *Client) continuesBy(r route, req *providers.ChatRequest) Continuation {
	if cs, ok := c.continuations[r.e.name]; ok {
		way := cs.all
		if w, ok := cs.byModel[r.key]; ok {
			way = w
		}
		if way != ContinueDefault {
			return way
		}
	}
	if p, ok := r.d.provider.(providers.Prefiller); ok && p.Prefills(r.model, req) {
		return ContinuePrefill
	}
	return ContinueNone
}

// continuable reports whether a route the walk has not tried may continue an answer to its
// call: only then does a stream in "continue" keep its walk for a rescue.
func (w *walk) continuable() bool {
	for i, name := range w.cur.chain {
		e := w.c.entries[name]
		if !w.takes(e) {
			continue
		}
		m := w.c.modelFor(e, w.model, i == 0)
		for _, d := range e.deps {
			if !w.isTried(d) && w.c.continuesBy(routeOf(e, d, m), w.op.chat) != ContinueNone {
				return true
			}
		}
	}
	return false
}

// rescueMode is the call's StreamRescue on deployment d: its own (WithRescue), else its
// policy's.
func (op *operation) rescueMode(d *deployment) string {
	if op.o != nil && op.o.rescue != "" {
		if op.o.rescue == resilience.RescueOff {
			return ""
		}
		return op.o.rescue
	}
	pol := op.pl.policy
	if pol == nil {
		pol = d.pipeline.Policy()
	}
	return pol.Rescue()
}

// continuation is what a rescue carries to the route that continues an answer.
type continuation struct {
	// prefill is the text delivered so far without its trailing whitespace, trimmed that
	// whitespace (providers.PrefillOf): a continuation that starts with it again does not
	// deliver it twice. "" when no text came (a tool call cut before any): the route is then
	// asked for the whole answer, which any route may give.
	prefill, trimmed string
	// carried is the text delivered so far, as delivered.
	carried string
	// tool is the index of the tool call whose arguments were cut, -1 for none.
	tool int
}

// request is req continued by way: the answer so far as the assistant's last message, and the
// continuation prompt after it for ContinuePrompt, or marked Prefill.
func (k *continuation) request(req *providers.ChatRequest, way Continuation) *providers.ChatRequest {
	r := *req
	msgs := make([]providers.Message, len(req.Messages), len(req.Messages)+2)
	copy(msgs, req.Messages)
	msgs = append(msgs, providers.Message{Role: providers.RoleAssistant, Content: k.prefill})
	if way == ContinuePrompt {
		msgs = append(msgs, providers.Message{Role: providers.RoleUser, Content: ContinuationPrompt})
	} else {
		r.Prefill = true
	}
	r.Messages = msgs
	return &r
}

// continuation returns what a continuation of the stream's answer carries, nil when it cannot
// be continued: reasoning was delivered (a prefill cannot carry it, and a new answer would
// reason again), more than one tool call was, or the text exceeds maxCarry.
func (s *Stream) continuation() *continuation {
	if s.reasoned || s.tools > 1 {
		return nil
	}
	text := s.Text()
	if len(text) > maxCarry {
		return nil
	}
	k := &continuation{carried: text, tool: -1}
	k.prefill, k.trimmed = providers.PrefillOf(text)
	if s.tools == 1 {
		k.tool = s.toolIndex
	}
	return k
}

// joiner joins the deltas of a stream that continues another's answer to what was delivered:
// the whitespace the prefill left out is not delivered twice, and a tool call that replaces
// the one that was cut takes its index, its first fragment marked Restart.
type joiner struct {
	carried string // the text delivered before this stream
	ws      string // the whitespace still to match at the start of the continuation
	skipped int    // the bytes of the continuation's text not delivered (whitespace delivered already)
	started bool   // text other than that whitespace came
	tool    int    // the index of the tool call that was cut, -1 for none
	marked  bool   // the replacing call's first fragment was marked
}

// newJoiner is the joiner of the stream that continues k.
func newJoiner(k *continuation) *joiner {
	return &joiner{carried: k.carried, ws: k.trimmed, tool: k.tool}
}

// fix joins d to what came before it.
func (j *joiner) fix(d *providers.Delta) {
	if !j.started && d.Text != "" {
		n := 0
		for n < len(d.Text) && n < len(j.ws) && d.Text[n] == j.ws[n] {
			n++
		}
		d.Text, j.ws, j.skipped = d.Text[n:], j.ws[n:], j.skipped+n
		if d.Text != "" || j.ws == "" {
			j.started = true
		}
	}
	if j.tool < 0 || len(d.ToolCalls) == 0 {
		return
	}
	// The continuation numbers its calls from 0: the first replaces the call that was cut.
	d.ToolCalls = append([]providers.ToolCallDelta(nil), d.ToolCalls...)
	for i := range d.ToolCalls {
		tc := &d.ToolCalls[i]
		tc.Index += j.tool
		if !j.marked && (tc.ID != "" || tc.Name != "") {
			tc.Restart, j.marked = true, true
		}
	}
}

// note records what delta d delivers besides text, for a continuation: reasoning, and the
// tool calls begun (a fragment with an ID or a name) and the index of the last.
func (s *Stream) note(d *providers.Delta) {
	if d.Reasoning != "" {
		s.reasoned = true
	}
	for _, tc := range d.ToolCalls {
		if tc.ID != "" || tc.Name != "" {
			if !tc.Restart { // a call that replaces a cut one is not one more
				s.tools++
			}
			s.toolIndex = tc.Index
		}
	}
}
