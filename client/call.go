package client

import (
	"context"
	"errors"

	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// The prologue: what every call does before its walk, and after it, once (see the package
// doc's anatomy of a call). Chat, ChatStream and Embed each describe their call as an
// operation and hand it to Client.call, which validates it, plans it (its options: the chain,
// the policy), starts its whole-call deadline, asks the budgets to admit it (budget.go), starts
// its telemetry, walks its chain (walk.go) and settles what it cost. What differs between the
// three is the operation's: its request, its try (chatTry, streamTry, embedTry) and how an
// answer is completed (serve).

// operation is one call of the client, as the call path sees it: what it asks and everything
// its tries read. Its tries may run on goroutines of their own (hedging), so nothing changes
// it once its walk has begun; what the walk learns is the walk's.
type operation struct {
	c      *Client
	kind   Operation
	stream bool                    // a ChatStream
	chat   *providers.ChatRequest  // Chat and ChatStream: the request as sent (after a downgrade)
	embed  *providers.EmbedRequest // Embed
	o      *callOptions            // nil for none
	pl     plan
	// bill is what prices the tries whose usage no server reported (see abandonedCost);
	// ticket is what the call holds in the client's budgets, nil when none; prior the count of
	// the prompt made for them, nil when none was made (countForBudgets).
	bill   bill
	ticket *cost.Ticket
	prior  *priorCount
	tr     CallTracker   // nil without telemetry
	dl     *callDeadline // the whole-call deadline, nil for none
	// hedgeable: a chat call that starts no work its provider keeps (ChatRequest.Background),
	// which may be hedged (see hedgeOf).
	hedgeable bool
	// cont, in a stream's rescue that continues its answer, is what the continuation carries
	// (continue.go): each try sends the request continued in its route's way.
	cont *continuation
}

// call makes the call op: the prologue, the walk, and the settlement of its budgets. A
// stream's call goes on after call returns: its budgets are settled, and its telemetry ends,
// when it ends.
func (c *Client) call(ctx context.Context, op *operation) (any, error) {
	if ctx == nil {
		return nil, errNilContext()
	}
	if err := op.validate(); err != nil {
		return nil, err
	}
	// Nothing is counted here: each try estimates what its route needs (estimate.go).
	op.bill = bill{chat: op.chat, embed: op.embed}
	if op.kind != OperationEmbeddings {
		op.hedgeable = !op.chat.Background // a hedge would start the background work twice
	}
	pl, err := c.planFor(op.o)
	if err != nil {
		return nil, err
	}
	// For a stream the whole-call deadline bounds the call until its first content (or in
	// buffer mode its whole answer), not the answer that then streams: see handOver.
	ctx, dl := c.withDeadline(ctx, c.callTimeout(op.o, pl))
	op.c, op.pl, op.dl = c, pl, dl
	err = c.admit(ctx, op)
	ctx, op.tr = c.begin(ctx, op)
	reportCount(op.tr, op.prior)
	if err != nil {
		dl.release()
		return nil, endCall(op.tr, err)
	}
	w := walk{c: c, ctx: ctx, op: *op, ask: op.ask(), cur: cursor{chain: op.pl.chain}}
	resp, err := w.run()
	if op.stream {
		return op.handOver(resp, err, &w.acct)
	}
	dl.release()
	op.settle(resp, err, &w.acct)
	return resp, err
}

// validate checks the request before anything is sent: a bad_request names its mistake.
func (op *operation) validate() error {
	if op.kind == OperationEmbeddings {
		return op.embed.Validate()
	}
	return op.chat.Validate()
}

// ask is what the call asks of its routes (pick.go).
func (op *operation) ask() ask {
	if op.kind == OperationEmbeddings {
		return ask{model: op.embed.Model, need: providers.CapEmbeddings}
	}
	return askOf(op.chat, op.stream)
}

// try makes the try t of the call on its route, with ctx: the answer (a *providers.ChatResponse,
// a *Stream or a *providers.EmbedResponse; nil on failure), what the pipeline did, and the
// failure.
func (op *operation) try(ctx context.Context, t try) (any, *resilience.CallInfo, error) {
	switch {
	case op.kind == OperationEmbeddings:
		resp, info, err := op.embedTry(ctx, t)
		if resp == nil {
			return nil, info, err // a nil answer is no answer, not a typed nil
		}
		return resp, info, err
	case op.stream:
		s, info, err := op.streamTry(ctx, t)
		if s == nil {
			return nil, info, err
		}
		return s, info, err
	}
	resp, info, err := op.chatTry(ctx, t)
	if resp == nil {
		return nil, info, err
	}
	return resp, info, err
}

// serve completes resp, the answer attempt at served after the walk's failures (acct) — res is
// its telemetry, nil without — and reports whether the call goes on after its walk (a stream,
// which reports its own end).
func (op *operation) serve(w *walk, resp any, at *attempt, res *TryResult) bool {
	switch r := resp.(type) {
	case *providers.ChatResponse:
		op.serveChat(r, at, res, w.acct)
	case *providers.EmbedResponse:
		op.serveEmbed(r, at, res, w.acct)
	case *Stream:
		return op.serveStream(w, r, at, res)
	}
	return false
}

// settle ends what the call holds in the client's budgets, once its walk ended with resp or
// err, the attempts it abandoned having cost acct.Cost.
func (op *operation) settle(resp any, err error, acct *Accounting) {
	if op.ticket == nil {
		return
	}
	if op.kind == OperationEmbeddings {
		// Never downgraded, an embeddings call would have cost the same with every budget
		// enforced.
		total := acct.Cost.Total()
		if err == nil {
			total = resp.(*providers.EmbedResponse).Cost.Total()
		}
		op.ticket.Settle(total, total)
		return
	}
	if err != nil {
		op.c.settle(op.ticket, acct.Cost, "", "", providers.Usage{}, op.bill)
		return
	}
	r := resp.(*providers.ChatResponse)
	op.c.settle(op.ticket, r.Cost, r.Provider, r.Model, r.Usage, op.bill)
}

// begin starts the call op: the context its providers see (carrying the options' HTTP changes,
// if any) and its telemetry tracker (nil without telemetry).
func (c *Client) begin(ctx context.Context, op *operation) (context.Context, CallTracker) {
	o := op.o
	if o.sendsExtras() {
		ctx = &callExtras{Context: ctx, o: o}
	}
	if c.telemetry == nil {
		return ctx, nil
	}
	if op.kind == OperationEmbeddings {
		return c.startCall(ctx, o, op.pl, op.kind, false, op.ask(), 0, nil, nil)
	}
	r := op.chat // after a downgrade, the request as sent
	return c.startCall(ctx, o, op.pl, op.kind, op.stream, op.ask(), r.MaxTokens, r.Temperature, r.TopP)
}

// errNilContext is the failure of a call made with a nil context: the caller's mistake.
func errNilContext() *providers.Error {
	return &providers.Error{Kind: providers.KindBadRequest, Message: providers.NilContext}
}

// failed completes the failure err of a call with options o: the call's own ID on a failure
// raised before any provider was tried (a bad request, an option the client refused), as on
// every other, and the deferral decision in deferred mode.
func (c *Client) failed(o *callOptions, err error) error {
	if o == nil {
		return err
	}
	if o.requestID != "" {
		var pe *providers.Error
		if errors.As(err, &pe) && pe.ClientRequestID == "" {
			pe.ClientRequestID = o.requestID
		}
	}
	return c.deferred(o, err)
}

// endCall reports the failure err of a call to its tracker, if any, and returns err.
func endCall(tr CallTracker, err error) error {
	if tr != nil {
		tr.End(err)
	}
	return err
}
