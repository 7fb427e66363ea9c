package steadyasynq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/hibiken/asynq"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/providers"
)

// AwaitingHeader is the task header in which Background keeps the background answer a task
// waits for (a deferral.Awaiting in its JSON form). A task without it asks for the answer; a
// task with it looks at the answer it names.
const AwaitingHeader = "steady-awaiting"

// Enqueuer enqueues a task: *asynq.Client is one.
type Enqueuer interface {
	EnqueueContext(ctx context.Context, task *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error)
}

// Background is the asynq.Handler of tasks that each ask an LLM for one long answer in
// background mode (providers.ChatRequest.Background) and wait for it without holding a worker
// or a connection: the first run asks (Ask builds the request from the task) and returns at
// once, leaving the answer to the provider; each later run looks at it once, until it is
// finished and Done gets it. The prompt is sent by the first run only.
//
//	mux.Handle("report", &steadyasynq.Background{Client: c, Enqueuer: enq,
//		Ask: func(ctx context.Context, t *asynq.Task) (*providers.ChatRequest, error) {
//			return &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: string(t.Payload())}}}, nil
//		},
//		Done: func(ctx context.Context, t *asynq.Task, resp *providers.ChatResponse) error {
//			return reports.Save(ctx, t.Payload(), resp.Message.Content)
//		}})
//
// with the server configured as for any deferred call (RetryDelayFunc, IsFailure: see the
// package documentation) and the tasks enqueued with MaxRetry(1) or more.
//
// How it waits: while the answer is pending, the run enqueues the next look — a task of the
// same type, payload and queue, with the same MaxRetry, whose AwaitingHeader names the answer —
// to be processed when the Decider says (the poll backoff, or later when the server asked), and
// returns nil. A look whose read fails (a rate limit, an outage) is retried as any deferred
// call is, at its due time, with its header unchanged. The answer the server no longer holds
// (providers.ErrResponseGone), an answer that failed, one still pending after the Decider's
// MaxAwait (then cancelled), and a header that is not a valid Awaiting (a forged or garbled
// task, refused before anything is sent) archive the task: nothing is asked again. A look's
// task ID is derived from the answer's ID and the look's number, so a look enqueued twice
// (a run that crashed after enqueuing) is one task.
//
// When the first run cannot enqueue the first look (Redis is down), it cancels the answer it
// started, so that it is not produced for nobody, and fails; the task's retry asks again. Done
// runs on the run that found the answer finished; when it fails, that run is retried, and
// looks again (the answer stays stored) rather than asking again. Delivery is at least once:
// Done may see the same answer twice, never a second answer to the same task unless the
// first run crashed between asking and enqueuing.
type Background struct {
	// Client makes the call and reads the answer (on the route that stored it).
	Client *client.Client
	// Enqueuer enqueues the looks.
	Enqueuer Enqueuer
	// Ask builds the request of task t; Background sets its Background field. An error is
	// returned as the task's error.
	Ask func(ctx context.Context, t *asynq.Task) (*providers.ChatRequest, error)
	// Done receives the finished answer of task t (Status completed, incomplete or cancelled).
	Done func(ctx context.Context, t *asynq.Task, resp *providers.ChatResponse) error
	// Decider paces the looks (PollFirst, PollMax, MaxAwait) and decides the retries; its zero
	// value uses the defaults.
	Decider deferral.Decider
	// CallOptions are added to the call that asks and to the looks (client.Deferred with the
	// task's attempt number is always added last).
	CallOptions []client.CallOption
	// EnqueueOptions are added to those of each look (after the queue, MaxRetry, ProcessAt and
	// TaskID that Background sets, so they win): asynq.Retention, asynq.Timeout…
	EnqueueOptions []asynq.Option
}

var _ asynq.Handler = (*Background)(nil)

// ProcessTask asks for the answer of task t, or looks at the answer t waits for (see
// Background).
func (b *Background) ProcessTask(ctx context.Context, t *asynq.Task) error {
	switch {
	case b.Client == nil || b.Enqueuer == nil || b.Ask == nil || b.Done == nil:
		return errors.New("steadyasynq: Background needs its Client, Enqueuer, Ask and Done")
	case t == nil:
		return fmt.Errorf("steadyasynq: Background got no task (%w)", asynq.SkipRetry)
	}
	if raw, ok := t.Headers()[AwaitingHeader]; ok {
		a, err := deferral.ParseAwaiting([]byte(raw))
		if err != nil {
			// Nothing was sent: a record that names no answer of ours is the task's end.
			return fmt.Errorf("steadyasynq: the task's %s header: %w (%w)", AwaitingHeader, err, asynq.SkipRetry)
		}
		return b.look(ctx, t, a)
	}
	return b.ask(ctx, t)
}

// options are the call options of a run of the task whose attempt number is attempt.
func (b *Background) options(attempt int) []client.CallOption {
	return append(append(make([]client.CallOption, 0, len(b.CallOptions)+1), b.CallOptions...), client.Deferred(attempt))
}

// ask makes the call that starts the answer of t.
func (b *Background) ask(ctx context.Context, t *asynq.Task) error {
	req, err := b.Ask(ctx, t)
	if err != nil {
		return err
	}
	if req == nil {
		return fmt.Errorf("steadyasynq: Ask returned no request (%w)", asynq.SkipRetry)
	}
	req.Background = true
	resp, err := b.Client.Chat(ctx, req, b.options(Attempt(ctx))...)
	if err != nil {
		return Result(ctx, err)
	}
	err = b.Decider.Defer(resp)
	var p *deferral.Pending
	switch {
	case err == nil:
		return b.Done(ctx, t, resp) // finished at once
	case !errors.As(err, &p):
		return Result(ctx, err)
	}
	if err := b.enqueue(ctx, t, p); err != nil {
		// Nobody would look at the answer: stop it rather than have it produced for nothing.
		_, cerr := b.Client.Cancel(ctx, p.Next.Stored, b.options(1)...)
		msg := "it was cancelled"
		if cerr != nil {
			msg = "cancelling it failed too: " + cerr.Error()
		}
		return fmt.Errorf("steadyasynq: the background answer %s was started but its first look could not be enqueued (%w); %s",
			p.Next.Stored.ID, err, msg)
	}
	return nil
}

// look looks once at the answer a that t waits for.
func (b *Background) look(ctx context.Context, t *asynq.Task, a deferral.Awaiting) error {
	attempt := Attempt(ctx)
	resp, err := b.Decider.Await(ctx, b.Client.Background(b.options(attempt)...), a, attempt)
	if err == nil {
		return b.Done(ctx, t, resp)
	}
	var p *deferral.Pending
	if errors.As(err, &p) {
		return b.enqueue(ctx, t, p) // a failure retries this look, header and all
	}
	return Result(ctx, err)
}

// enqueue enqueues the next look of t at the answer p names, when p says. A look already
// enqueued (its task ID taken) counts as enqueued.
func (b *Background) enqueue(ctx context.Context, t *asynq.Task, p *deferral.Pending) error {
	data, err := json.Marshal(p.Next)
	if err != nil {
		return err
	}
	headers := maps.Clone(t.Headers())
	if headers == nil {
		headers = map[string]string{}
	}
	headers[AwaitingHeader] = string(data)
	// asynq keeps the time in whole seconds, rounded down: round up, so the look never comes
	// before a time the server asked for.
	at := time.Now().Add(p.Decision.Wait(time.Now())).Truncate(time.Second).Add(time.Second)
	opts := []asynq.Option{asynq.ProcessAt(at), asynq.TaskID(fmt.Sprintf("steady-look:%s:%d", p.Next.Stored.ID, p.Next.Polls))}
	if q, ok := asynq.GetQueueName(ctx); ok {
		opts = append(opts, asynq.Queue(q))
	}
	if n, ok := asynq.GetMaxRetry(ctx); ok {
		opts = append(opts, asynq.MaxRetry(n))
	}
	_, err = b.Enqueuer.EnqueueContext(ctx, asynq.NewTaskWithHeaders(t.Type(), t.Payload(), headers), append(opts, b.EnqueueOptions...)...)
	if errors.Is(err, asynq.ErrTaskIDConflict) {
		return nil // this look was enqueued already, by an earlier run of the same task
	}
	return err
}
