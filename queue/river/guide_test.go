package steadyriver_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	steadyriver "github.com/steadyllm/steady/queue/river"
	"github.com/steadyllm/steady/resilience"
)

// The code of docs/job-queues.md for River, run against a real PostgreSQL and the fake LLM
// server.

// ReportArgs are the arguments of a job that summarises a report.
type ReportArgs struct {
	Report string `json:"report"`
}

func (ReportArgs) Kind() string { return "report" }

// docs:begin worker
// ReportWorker calls steady in deferred mode with the job's attempt number; the wrapper
// (steadyriver.Wrap) tells River what to do with a failure: snooze, retry or cancel.
type ReportWorker struct {
	river.WorkerDefaults[ReportArgs]
	LLM *client.Client
}

func (w *ReportWorker) Work(ctx context.Context, job *river.Job[ReportArgs]) error {
	_, err := w.LLM.Chat(ctx, &providers.ChatRequest{
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "Summarise " + job.Args.Report}},
	}, client.Deferred(job.Attempt))
	return err
}

// docs:end worker

// A job whose call meets a 429 with a 1 s hint is snoozed to the hint — the attempt is not
// spent — and completes on its second run.
func TestGuide_RiverSnoozesTheJobToTheHint(t *testing.T) {
	ctx := context.Background()
	fake := mocks.NewServer(mocks.WithScript(mocks.RateLimited(time.Second), mocks.OK()))
	defer fake.Close()
	c, err := client.New(client.WithProvider("openai", resilience.DefaultOptions(), factory(fake)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pool, err := pgxpool.New(ctx, databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		t.Fatal(err)
	}

	// docs:begin register
	workers := river.NewWorkers()
	river.AddWorker[ReportArgs](workers, steadyriver.Wrap[ReportArgs](&ReportWorker{LLM: c}))
	// docs:end register
	rc, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2}},
		Workers:           workers,
		FetchPollInterval: 50 * time.Millisecond,
		FetchCooldown:     10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	events, cancel := rc.Subscribe(river.EventKindJobCompleted, river.EventKindJobCancelled, river.EventKindJobFailed)
	defer cancel()
	if err := rc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stopCtx, c := context.WithTimeout(ctx, 10*time.Second)
		defer c()
		_ = rc.Stop(stopCtx)
	}()
	if _, err := rc.Insert(ctx, ReportArgs{Report: "the annual report"}, &river.InsertOpts{MaxAttempts: 5}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-events:
		if ev.Kind != river.EventKindJobCompleted || ev.Job.Attempt != 1 {
			t.Fatalf("the job ended %s on attempt %d; want completed on its first attempt (the snooze spent none)", ev.Kind, ev.Job.Attempt)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the job did not finish; the fake saw %d requests", fake.Journal().Len())
	}
	reqs := fake.Journal().Requests()
	if len(reqs) != 2 || reqs[1].Arrived.Sub(reqs[0].Arrived) < 900*time.Millisecond {
		t.Fatalf("the fake saw %d requests; want the second one after the 1 s hint", len(reqs))
	}
}

// TopicArgs are the arguments of a job that asks for a long report on a topic.
type TopicArgs struct {
	Topic string `json:"topic"`
}

func (TopicArgs) Kind() string { return "topic_report" }

// A job that asks for a long answer in background mode frees its worker: it asks once and is
// snoozed, using no attempt, until a look finds the answer finished and hands it to Done.
func TestGuide_RiverWaitsForABackgroundAnswerWithoutAWorker(t *testing.T) {
	ctx := context.Background()
	fake := mocks.NewServer(mocks.WithReply("Revenue grew 12%."))
	defer fake.Close()
	c := responsesClient(t, fake)
	reports := make(chan string, 2)
	workers := river.NewWorkers()

	// docs:begin background
	report := &steadyriver.Background[TopicArgs]{Client: c,
		Ask: func(ctx context.Context, job *river.Job[TopicArgs]) (*providers.ChatRequest, error) {
			return &providers.ChatRequest{Messages: []providers.Message{
				{Role: providers.RoleUser, Content: "Write a report on " + job.Args.Topic}}}, nil
		},
		Done: func(ctx context.Context, job *river.Job[TopicArgs], resp *providers.ChatResponse) error {
			reports <- resp.Message.Content // keep it idempotent: Done may see the same answer twice
			return nil
		}}
	river.AddWorker[TopicArgs](workers, report) // no Wrap: Background hands River its failures itself
	// docs:end background
	report.Decider = deferral.Decider{PollFirst: 100 * time.Millisecond} // the test's: no need to wait seconds
	rc, events := startRiver(t, workers)
	if _, err := rc.Insert(ctx, TopicArgs{Topic: "the quarter"}, &river.InsertOpts{MaxAttempts: 3}); err != nil {
		t.Fatal(err)
	}
	ev := nextEnd(t, events)
	if ev.Kind != river.EventKindJobCompleted || ev.Job.Attempt != 1 {
		t.Fatalf("the job ended %s on attempt %d; want completed on its first attempt (snoozes spend none)", ev.Kind, ev.Job.Attempt)
	}
	if got := <-reports; got != "Revenue grew 12%." {
		t.Fatalf("Done got %q", got)
	}
	posts := 0
	for _, r := range fake.Journal().Requests() {
		if r.Method == http.MethodPost {
			posts++
		}
	}
	if posts != 1 || fake.Journal().Len() < 2 {
		t.Fatalf("%d requests, %d of them POSTs: want the prompt sent once and at least one look", fake.Journal().Len(), posts)
	}
}
