package steadyasynq_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	steadyasynq "github.com/steadyllm/steady/queue/asynq"
	"github.com/steadyllm/steady/resilience"
)

// The code of docs/job-queues.md for asynq, run against a real redis-server and the fake LLM
// server.

// docs:begin handler
// summarise is the task's handler: its call runs in deferred mode, and Result turns the
// call's error into what asynq should do with the task.
func summarise(c *client.Client, done chan<- struct{}) asynq.HandlerFunc {
	return func(ctx context.Context, task *asynq.Task) error {
		_, err := c.Chat(ctx, &providers.ChatRequest{
			Messages: []providers.Message{{Role: providers.RoleUser, Content: "Summarise " + string(task.Payload())}},
		}, client.Deferred(steadyasynq.Attempt(ctx)))
		if err == nil {
			done <- struct{}{}
		}
		return steadyasynq.Result(ctx, err)
	}
}

// docs:end handler

// A task whose call meets a 429 with a 1 s hint runs again after the hint, without spending one
// of its retries, and completes; no worker slept through the hint.
func TestGuide_AsynqRunsTheTaskAgainAtTheHint(t *testing.T) {
	fake := mocks.NewServer(mocks.WithScript(mocks.RateLimited(time.Second), mocks.OK()))
	defer fake.Close()
	c, err := client.New(client.WithProvider("openai", resilience.DefaultOptions(), factory(fake)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	redis := asynq.RedisClientOpt{Addr: redisAddr}
	freshQueue(t, redis, "default")

	// docs:begin server
	cfg := asynq.Config{
		RetryDelayFunc: steadyasynq.RetryDelayFunc(nil), // the decision's time, not asynq's backoff
		IsFailure:      steadyasynq.IsFailure,           // a rate limit or an open circuit spends no retry
	}
	// docs:end server
	cfg.DelayedTaskCheckInterval = 100 * time.Millisecond // the test's: the task is due in a second
	cfg.Logger = quiet{}
	srv := asynq.NewServer(redis, cfg)
	done := make(chan struct{}, 1)
	mux := asynq.NewServeMux()
	var mu sync.Mutex
	var retried []int // asynq's retry count at each run
	mux.Use(func(next asynq.Handler) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
			n, _ := asynq.GetRetryCount(ctx)
			mu.Lock()
			retried = append(retried, n)
			mu.Unlock()
			return next.ProcessTask(ctx, task)
		})
	})
	mux.HandleFunc("summarise", summarise(c, done))
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	enq := asynq.NewClient(redis)
	defer enq.Close()
	// docs:begin enqueue
	_, err = enq.Enqueue(asynq.NewTask("summarise", []byte("the annual report")), asynq.MaxRetry(5))
	// docs:end enqueue
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("the task did not complete; the fake saw %d requests", fake.Journal().Len())
	}
	reqs := fake.Journal().Requests()
	if len(reqs) != 2 || reqs[1].Arrived.Sub(reqs[0].Arrived) < 900*time.Millisecond {
		t.Fatalf("the fake saw %d requests; want the second one after the 1 s hint", len(reqs))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(retried) != 2 || retried[1] != 0 {
		t.Fatalf("asynq's retry counts per run %v: the second run must not have spent a retry", retried)
	}
}

// A task that asks for a long answer in background mode frees its worker: the handler asks
// once, and the looks that follow hand the answer to Done when it is finished.
func TestGuide_AsynqWaitsForABackgroundAnswerWithoutAWorker(t *testing.T) {
	fake := mocks.NewServer(mocks.WithReply("Revenue grew 12%."))
	defer fake.Close()
	c := responsesClient(t, fake)
	redis := asynq.RedisClientOpt{Addr: redisAddr}
	freshQueue(t, redis, "default")
	enq := asynq.NewClient(redis)
	defer enq.Close()
	reports := make(chan string, 2)
	mux := asynq.NewServeMux()

	// docs:begin background
	report := &steadyasynq.Background{Client: c, Enqueuer: enq, // enq: the *asynq.Client the looks go through
		Ask: func(ctx context.Context, t *asynq.Task) (*providers.ChatRequest, error) {
			return &providers.ChatRequest{Messages: []providers.Message{
				{Role: providers.RoleUser, Content: "Write a report on " + string(t.Payload())}}}, nil
		},
		Done: func(ctx context.Context, t *asynq.Task, resp *providers.ChatResponse) error {
			reports <- resp.Message.Content // keep it idempotent: Done may see the same answer twice
			return nil
		}}
	mux.Handle("report", report)
	// docs:end background
	report.Decider = deferral.Decider{PollFirst: 100 * time.Millisecond} // the test's: no need to wait seconds
	startServer(t, redis, "default", mux)
	if _, err := enq.Enqueue(asynq.NewTask("report", []byte("the quarter")), asynq.MaxRetry(3)); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-reports:
		if got != "Revenue grew 12%." {
			t.Fatalf("Done got %q", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no report; the fake saw %d requests", fake.Journal().Len())
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
