package steadyriver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/providers"
)

// AwaitingKey is the key of the job's metadata under which Background keeps the background
// answer a job waits for (a deferral.Awaiting in its JSON form). A job without it asks for the
// answer; a job with it looks at the answer it names.
const AwaitingKey = "steady_awaiting"

// Background is the River worker of jobs that each ask an LLM for one long answer in
// background mode (providers.ChatRequest.Background) and wait for it without holding a worker
// or a connection: the first run asks (Ask builds the request from the job) and snoozes; each
// later run looks at the answer once, until it is finished and Done gets it. The prompt is
// sent by the first run only.
//
//	river.AddWorker(workers, &steadyriver.Background[ReportArgs]{Client: c,
//		Ask: func(ctx context.Context, job *river.Job[ReportArgs]) (*providers.ChatRequest, error) {
//			return &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: job.Args.Topic}}}, nil
//		},
//		Done: func(ctx context.Context, job *river.Job[ReportArgs], resp *providers.ChatResponse) error {
//			return reports.Save(ctx, job.Args.Topic, resp.Message.Content)
//		}})
//
// How it waits: while the answer is pending, the run records it in the job's metadata
// (AwaitingKey, written by River with the snooze) and snoozes the job until the Decider's next
// look — the poll backoff, or later when the server asked — which uses no attempt. A failure is
// handed to River as Wrap hands a deferred one: a rate limit or an open circuit snoozes, a
// passing failure is a counted attempt retried at its due time, a permanent one cancels the
// job. A look that fails keeps the metadata, so its retry looks again. The answer the server
// no longer holds (providers.ErrResponseGone), an answer that failed, one still pending after
// the Decider's MaxAwait (then cancelled), and metadata that is not a valid Awaiting (a forged
// or garbled record, refused before anything is sent) cancel the job: nothing is asked again.
//
// Done runs on the run that found the answer finished; when it fails, the job's retry looks
// again (the answer stays stored) rather than asking again. Delivery is at least once: Done
// may see the same answer twice, never a second answer to the same job unless the first run
// ended between asking and River's recording of the snooze (a crash, a lost database).
type Background[T river.JobArgs] struct {
	river.WorkerDefaults[T]
	// Client makes the call and reads the answer (on the route that stored it).
	Client *client.Client
	// Ask builds the request of the job; Background sets its Background field. An error is
	// returned as the job's error.
	Ask func(ctx context.Context, job *river.Job[T]) (*providers.ChatRequest, error)
	// Done receives the job's finished answer (Status completed, incomplete or cancelled).
	Done func(ctx context.Context, job *river.Job[T], resp *providers.ChatResponse) error
	// Decider paces the looks (PollFirst, PollMax, MaxAwait) and decides the retries; its zero
	// value uses the defaults.
	Decider deferral.Decider
	// CallOptions are added to the call that asks and to the looks (client.Deferred with the
	// job's attempt number is always added last).
	CallOptions []client.CallOption

	due dueTimes
}

// Work asks for the job's answer, or looks at the answer it waits for (see Background).
func (b *Background[T]) Work(ctx context.Context, job *river.Job[T]) error {
	if b.Client == nil || b.Ask == nil || b.Done == nil {
		return errors.New("steadyriver: Background needs its Client, Ask and Done")
	}
	raw, err := awaitingOf(job.Metadata)
	if err != nil {
		return river.JobCancel(err)
	}
	if raw != nil {
		a, err := deferral.ParseAwaiting(raw)
		if err != nil {
			// Nothing was sent: a record that names no answer of ours is the job's end.
			return river.JobCancel(fmt.Errorf("steadyriver: the job's %s metadata: %w", AwaitingKey, err))
		}
		return b.due.toRiver(b.look(ctx, job, a), job.ID, job.Attempt, job.MaxAttempts)
	}
	return b.due.toRiver(b.ask(ctx, job), job.ID, job.Attempt, job.MaxAttempts)
}

// NextRetry returns the due time of the job's last deferred failure, or River's default.
func (b *Background[T]) NextRetry(job *river.Job[T]) time.Time {
	if at, ok := b.due.take(job.ID); ok {
		return at
	}
	return b.WorkerDefaults.NextRetry(job)
}

// options are the call options of a run of attempt number attempt.
func (b *Background[T]) options(attempt int) []client.CallOption {
	return append(append(make([]client.CallOption, 0, len(b.CallOptions)+1), b.CallOptions...), client.Deferred(attempt))
}

// ask makes the call that starts the job's answer.
func (b *Background[T]) ask(ctx context.Context, job *river.Job[T]) error {
	req, err := b.Ask(ctx, job)
	if err != nil {
		return err
	}
	if req == nil {
		return river.JobCancel(errors.New("steadyriver: Ask returned no request"))
	}
	req.Background = true
	resp, err := b.Client.Chat(ctx, req, b.options(job.Attempt)...)
	if err != nil {
		return err
	}
	if err := b.Decider.Defer(resp); err != nil {
		return b.snooze(ctx, err)
	}
	return b.Done(ctx, job, resp) // finished at once
}

// look looks once at the answer a that the job waits for.
func (b *Background[T]) look(ctx context.Context, job *river.Job[T], a deferral.Awaiting) error {
	resp, err := b.Decider.Await(ctx, b.Client.Background(b.options(job.Attempt)...), a, job.Attempt)
	if err != nil {
		return b.snooze(ctx, err)
	}
	return b.Done(ctx, job, resp)
}

// snooze turns a *deferral.Pending into the snooze of the job until its next look, with the
// Awaiting in the job's metadata; any other error is returned as it is.
func (b *Background[T]) snooze(ctx context.Context, err error) error {
	var p *deferral.Pending
	if !errors.As(err, &p) {
		return err
	}
	if err := river.MetadataSet(ctx, AwaitingKey, p.Next); err != nil {
		return err
	}
	return river.JobSnooze(p.Decision.Wait(time.Now()))
}

// awaitingOf returns the raw value of AwaitingKey in a job's metadata, nil when there is none.
func awaitingOf(metadata []byte) (json.RawMessage, error) {
	if len(metadata) == 0 {
		return nil, nil
	}
	var m struct {
		Awaiting json.RawMessage `json:"steady_awaiting"`
	}
	if err := json.Unmarshal(metadata, &m); err != nil {
		return nil, &providers.Error{Kind: providers.KindBadRequest, Message: "steadyriver: the job's metadata is not a JSON object"}
	}
	if string(m.Awaiting) == "null" {
		return nil, nil
	}
	return m.Awaiting, nil
}
