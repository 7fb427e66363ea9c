package deferral

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/steadyllm/steady/internal/redact"
	"github.com/steadyllm/steady/providers"
)

// Waiting for a background answer. A job that asks for a long answer should not hold a
// connection, a worker and a bulkhead slot for the minutes it takes: it asks for it in
// background mode (providers.ChatRequest.Background), which comes back at once with the answer
// queued and stored, hands its queue an Awaiting — the stored answer, in the job's own record —
// and frees the worker. The job's next run looks at the answer (Decider.Await): finished, it is
// the job's result; still pending, the job is put back until the next look, later each time
// (or when the server asked); failed to read, it comes back as any deferred failure does. The
// prompt is sent once: no run after the first sends it again, whatever happens.
//
//	resp, err := c.Chat(ctx, req, client.Deferred(attempt)) // req.Background = true
//	if err != nil {
//		return err // a *deferral.Error: the queue retries the start
//	}
//	if p := d.Defer(resp); p != nil {
//		return p // a *deferral.Pending: keep p.Next in the job, come back at p.Decision.Wait
//	}
//	…the answer came at once: resp
//
//	// the job's next run, with the Awaiting it kept:
//	resp, err := d.Await(ctx, c, awaiting, attempt)
//
// The queue adapters (queue/asynq's Background, queue/river's Background) do all of this for a
// job handler that only builds the request and uses the answer.
//
// An Awaiting read back from a queue is untrusted: its JSON form is bounded (MaxAwaitingBytes)
// and checked (Awaiting.Validate) before anything is sent, and its stored answer is read only
// on the route whose Origin it names (client.Retrieve refuses any other), so a forged or
// garbled record is a bad_request that ends the job, never a request to another endpoint.

// Defaults of the Decider's waiting for a background answer.
const (
	// DefaultPollFirst is the wait before the first look at a background answer.
	DefaultPollFirst = 2 * time.Second
	// DefaultPollMax is the longest wait between two looks.
	DefaultPollMax = time.Minute
	// DefaultMaxAwait is how long a job waits for a background answer before it gives up.
	DefaultMaxAwait = 24 * time.Hour
)

// SourcePoll is the Source of a Pending's decision: the background answer is not finished,
// and the next look comes after the poll backoff (Decider.PollFirst, doubling to PollMax).
const SourcePoll Source = "poll"

// Retriever reads a background answer as it stands: *client.Client (Retrieve, on the route
// that stored it) and a provider that answers in background mode
// (providers.BackgroundResponder) are Retrievers. When it can also cancel (a Cancel method of
// the same shape, as both have), Await cancels an answer it gives up on.
type Retriever interface {
	Retrieve(ctx context.Context, stored providers.StoredResponse) (*providers.ChatResponse, error)
}

// canceller is a Retriever that can cancel a pending answer.
type canceller interface {
	Cancel(ctx context.Context, stored providers.StoredResponse) (*providers.ChatResponse, error)
}

// Pending is what a job returns while the background answer it waits for is not finished:
// the Awaiting to keep for the next look (Next: the same answer, one look more) and when to
// look (Decision: Retry true, Source SourcePoll or SourceHint; Decision.Wait gives the delay).
// It is an error so that a handler can return it as it returns a *deferral.Error; the queue
// adapters turn it into their queue's "come back later".
type Pending struct {
	Next     Awaiting
	Decision Decision
	// Status is the answer's status as last read: queued or in progress.
	Status providers.ResponseStatus
}

func (p *Pending) Error() string {
	return fmt.Sprintf("the background answer %s is %s (look %d): look again in %s (%s: %s)",
		redact.Safe(p.Next.Stored.ID, maxAwaitIDLen), p.Status, p.Next.Polls, p.Decision.Delay.Round(time.Millisecond),
		p.Decision.Source, p.Decision.Reason)
}

func (d Decider) pollFirst() time.Duration {
	if d.PollFirst > 0 {
		return d.PollFirst
	}
	return DefaultPollFirst
}

func (d Decider) pollMax() time.Duration {
	if d.PollMax > 0 {
		return max(d.PollMax, d.pollFirst())
	}
	return max(DefaultPollMax, d.pollFirst())
}

func (d Decider) maxAwait() time.Duration {
	if d.MaxAwait > 0 {
		return d.MaxAwait
	}
	return DefaultMaxAwait
}

// pollDelay is the wait after look number polls (0: the call that started the answer): from
// PollFirst, twice as long after each look, at most PollMax, with a jitter of ±20 % so that
// jobs started together do not look together.
func (d Decider) pollDelay(polls int) time.Duration {
	delay, limit := d.pollFirst(), d.pollMax()
	for i := 0; i < polls && delay < limit; i++ {
		delay *= 2
	}
	delay = min(delay, limit)
	draw := rand.Float64
	if d.Random != nil {
		draw = d.Random
	}
	return time.Duration(float64(delay) * (0.8 + 0.4*min(max(draw(), 0), 1)))
}

// Defer returns the deferral of a job whose call started the background answer resp (a Chat
// of a request with Background): a *Pending whose Next names the answer (no look yet, started
// now) and whose Decision says when to look first (PollFirst, or later when the server asked:
// resp.RetryAfter). It returns nil when resp is not pending — the answer was finished at once,
// or the call was no background call: resp is then the job's result. A pending resp that names
// no stored answer with an Origin (which the Responses wire always gives) cannot be waited for:
// Defer returns a *Error whose decision is permanent.
func (d Decider) Defer(resp *providers.ChatResponse) error {
	if resp == nil || !resp.Status.Pending() {
		return nil
	}
	if resp.Stored == nil || resp.Stored.ID == "" || resp.Stored.Origin == "" {
		e := &providers.Error{Provider: resp.Provider, Kind: providers.KindBadRequest,
			Message: "a pending background answer without its StoredResponse (ID and Origin) cannot be waited for"}
		return &Error{Decision: permanent(1, e, "the answer cannot be named"), Err: e}
	}
	now := d.now()
	a := Awaiting{Stored: *resp.Stored, Started: now}
	return d.pending(now, a, resp, 1)
}

// pending is the Pending of awaiting a after a look (or the start) that found resp pending.
func (d Decider) pending(now time.Time, a Awaiting, resp *providers.ChatResponse, attempt int) *Pending {
	delay, src, why := d.pollDelay(a.Polls), SourcePoll, "the poll backoff"
	if h := resp.RetryAfter; h > delay {
		delay, src, why = h, SourceHint, "the server's hint"
	}
	if rl := resp.RateLimit; rl != nil {
		if at, ok := spentReset(rl); ok && at.Sub(now) > delay {
			delay, src, why = at.Sub(now), SourceHint, "the rate-limit reset"
		}
	}
	if delay < MinDelay {
		delay = MinDelay
	} else if delay > MaxDelay {
		delay, why = MaxDelay, why+fmt.Sprintf(", cut to the longest deferral (%s)", MaxDelay)
	}
	status := resp.Status
	return &Pending{Next: a, Status: status,
		Decision: Decision{Retry: true, At: now.Add(delay), Delay: delay, Attempt: attempt, Source: src, Reason: why,
			Provider: resp.Provider}}
}

// Await looks once at the background answer a job waits for, through r, and returns:
//
//   - the answer, when it is no longer pending (completed, incomplete or cancelled: its
//     Status says which);
//   - a *Pending while it is queued or in progress: keep its Next and come back at its
//     Decision — the poll backoff (PollFirst doubling to PollMax, jittered) or, when later, the
//     server's hint (a Retry-After on the read, a spent rate-limit budget's reset);
//   - a *Error (with the read's failure) when the read failed: its decision is Decide's for
//     attempt, the job's attempt number — a rate limit or an outage passes, so the job comes
//     back with the same Awaiting; an answer that is gone (providers.ErrResponseGone), failed
//     (providers.ErrResponseFailed) or that r refuses (another Origin: bad_request) is
//     permanent, since reading it again changes nothing;
//   - a permanent *Error of kind timeout when the answer is still pending MaxAwait after it
//     started: Await cancels it then, when r can cancel (the cancel's answer is returned if it
//     finished meanwhile);
//   - a permanent *Error of kind bad_request, without reading anything, when a fails
//     Validate or started in the future (more than a minute ahead of the Decider's clock).
//
// Nothing Await does sends the prompt again.
func (d Decider) Await(ctx context.Context, r Retriever, a Awaiting, attempt int) (*providers.ChatResponse, error) {
	attempt = max(attempt, 1)
	now := d.now()
	bad := func(msg string) error {
		e := &providers.Error{Kind: providers.KindBadRequest, Message: "Await: " + msg}
		return &Error{Decision: permanent(attempt, e, "bad_request will not pass by retrying"), Err: e}
	}
	switch {
	case ctx == nil:
		return nil, bad(providers.NilContext)
	case r == nil:
		return nil, bad("no Retriever to read the answer with")
	}
	if err := a.Validate(); err != nil {
		var pe *providers.Error
		errors.As(err, &pe)
		return nil, &Error{Decision: permanent(attempt, pe, "bad_request will not pass by retrying"), Err: err}
	}
	if a.Started.After(now.Add(maxClockSkew)) {
		return nil, bad(fmt.Sprintf("the Awaiting started at %s, after now (%s): it was not made by Defer",
			a.Started.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339)))
	}
	resp, err := r.Retrieve(ctx, a.Stored)
	if err != nil {
		return nil, d.readFailed(err, attempt)
	}
	if resp == nil {
		e := &providers.Error{Kind: providers.KindUnavailable, Message: "Await: the Retriever returned no answer and no error"}
		return nil, &Error{Decision: d.Decide(e, attempt), Err: e}
	}
	if !resp.Status.Pending() {
		return resp, nil
	}
	if waited := now.Sub(a.Started); waited > d.maxAwait() {
		return d.giveUp(ctx, r, a, resp, waited, attempt)
	}
	a.Polls = min(a.Polls+1, MaxPolls)
	return nil, d.pending(now, a, resp, attempt)
}

// readFailed is the deferral of a look whose read failed with err. A read in deferred mode
// (client.Deferred) failed with a *Error already: its failure is decided again here, by this
// Decider, rather than wrapped twice.
func (d Decider) readFailed(err error, attempt int) error {
	var de *Error
	if errors.As(err, &de) && de.Err != nil {
		err = de.Err
	}
	if errors.Is(err, providers.ErrResponseFailed) {
		var pe *providers.Error
		errors.As(err, &pe)
		return &Error{Decision: permanent(attempt, pe, "the background answer failed: reading it again gives the same "+
			"failure (a new call may succeed)"), Err: err}
	}
	return &Error{Decision: d.Decide(err, attempt), Err: err}
}

// giveUp ends the wait for an answer still pending after MaxAwait: it cancels it when r can,
// and returns the cancel's answer when it finished meanwhile, else a permanent timeout.
func (d Decider) giveUp(ctx context.Context, r Retriever, a Awaiting, last *providers.ChatResponse, waited time.Duration,
	attempt int) (*providers.ChatResponse, error) {
	msg := fmt.Sprintf("the background answer %s was still %s %s after it started (MaxAwait %s)",
		redact.Safe(a.Stored.ID, maxAwaitIDLen), last.Status, waited.Round(time.Second), d.maxAwait())
	if c, ok := r.(canceller); ok {
		resp, err := c.Cancel(ctx, a.Stored)
		switch {
		case err == nil && resp != nil && (resp.Status == providers.StatusCompleted || resp.Status == providers.StatusIncomplete):
			return resp, nil
		case err == nil:
			msg += ": cancelled"
		default:
			msg += ": cancelling it failed too (" + err.Error() + ")"
		}
	}
	e := &providers.Error{Provider: last.Provider, Kind: providers.KindTimeout, Message: msg}
	return nil, &Error{Decision: permanent(attempt, e, "the wait for the background answer ended"), Err: e}
}
