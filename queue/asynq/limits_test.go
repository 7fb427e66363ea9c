package steadyasynq_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// The delay handed to asynq for a deferral is never zero or negative and never past a day
// (and the second asynq's rounding needs), whatever the decision's time: centuries away
// (time.Until saturates, and adding the second overflowed into a negative delay, so asynq
// retried at once, forever), already past, or missing.
func TestRetryDelayFunc_IsNeverNegativeNorZeroNorPastADay(t *testing.T) {
	delay := steadyasynq.RetryDelayFunc(nil)
	task := asynq.NewTask("summarise", nil)
	decided := func(dec deferral.Decision) error {
		dec.Retry = true
		return fmt.Errorf("handler: %w", &deferral.Error{Decision: dec, Err: &providers.Error{Kind: providers.KindRateLimited}})
	}
	now := time.Now()
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"due centuries away", decided(deferral.Decision{At: now.AddDate(400, 0, 0), Delay: 1<<63 - 1})},
		{"due in the year 200000", decided(deferral.Decision{At: time.Date(200000, 1, 1, 0, 0, 0, 0, time.UTC)})},
		{"due an hour ago", decided(deferral.Decision{At: now.Add(-time.Hour)})},
		{"due now", decided(deferral.Decision{At: now})},
		{"made by hand without a time", decided(deferral.Decision{})},
		{"made by hand with a negative delay", decided(deferral.Decision{Delay: -time.Hour})},
	} {
		d := delay(0, tc.err, task)
		if d <= 0 || d > deferral.MaxDelay+time.Second {
			t.Errorf("%s: delay %v, want within (0, %v]", tc.name, d, deferral.MaxDelay+time.Second)
		}
	}
	// A decision due in 30 s is kept, plus the rounding's second.
	if d := delay(0, decided(deferral.Decision{At: time.Now().Add(30 * time.Second)}), task); d <= 30*time.Second || d > 31*time.Second {
		t.Errorf("due in 30 s: delay %v", d)
	}
}

// asynq archives a task whose retries are used up before it asks IsFailure: a task enqueued
// with MaxRetry(0) is archived at its first rate limit, and one that used up MaxRetry(1) on an
// overload at its next rate limit. Result makes the archived task say why (and
// ErrNoRetriesLeft lets an ErrorHandler tell); with MaxRetry(1) and no counted failure, rate
// limits come back until the call passes. Against a real redis-server and asynq server.
func TestAsynq_ACapacityDeferralWithNoRetriesLeftIsArchivedSayingWhy(t *testing.T) {
	zero := mocks.NewServer(mocks.WithScript(mocks.RateLimited(time.Second).Always()))
	defer zero.Close()
	one := mocks.NewServer(mocks.WithScript(mocks.RateLimited(time.Second), mocks.RateLimited(time.Second), mocks.OK()))
	defer one.Close()
	spent := mocks.NewServer(mocks.WithScript(mocks.Overloaded(), mocks.RateLimited(time.Second).Always()))
	defer spent.Close()
	o := resilience.DefaultOptions()
	o.RetryBaseDelaySeconds = 0.2
	c, err := client.New(
		client.WithProvider("zero", o, factory(zero)),
		client.WithProvider("one", o, factory(one)),
		client.WithProvider("spent", o, factory(spent)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()

	// Each task type is named after its provider and carries its MaxRetry.
	maxRetry := map[string]int{"zero": 0, "one": 1, "spent": 1}
	redis := asynq.RedisClientOpt{Addr: redisAddr, DB: 1}
	freshQueue(t, redis, "limits")
	var mu sync.Mutex
	runs := map[string][]run{}
	noRetriesLeft := map[string]bool{}
	done := make(chan string, 3)
	handler := asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
		retried, _ := asynq.GetRetryCount(ctx)
		mu.Lock()
		runs[task.Type()] = append(runs[task.Type()], run{time.Now(), steadyasynq.Attempt(ctx), retried})
		mu.Unlock()
		_, err := c.Chat(ctx, &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "summarise"}}},
			client.Deferred(steadyasynq.Attempt(ctx)), client.WithProviders(task.Type()))
		if err == nil {
			done <- task.Type()
		}
		return steadyasynq.Result(ctx, err)
	})
	srv := asynq.NewServer(redis, asynq.Config{
		Concurrency:              3,
		Queues:                   map[string]int{"limits": 1},
		RetryDelayFunc:           steadyasynq.RetryDelayFunc(nil),
		IsFailure:                steadyasynq.IsFailure,
		DelayedTaskCheckInterval: 100 * time.Millisecond,
		Logger:                   quiet{},
		ErrorHandler: asynq.ErrorHandlerFunc(func(_ context.Context, task *asynq.Task, err error) {
			if errors.Is(err, steadyasynq.ErrNoRetriesLeft) {
				mu.Lock()
				noRetriesLeft[task.Type()] = true
				mu.Unlock()
			}
		}),
	})
	if err := srv.Start(handler); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	enq := asynq.NewClient(redis)
	defer enq.Close()
	insp := asynq.NewInspector(redis)
	defer insp.Close()
	for typ, n := range maxRetry {
		if _, err := enq.Enqueue(asynq.NewTask(typ, nil), asynq.MaxRetry(n), asynq.Queue("limits")); err != nil {
			t.Fatal(err)
		}
	}

	select {
	case typ := <-done:
		if typ != "one" {
			t.Fatalf("%s completed", typ)
		}
	case <-time.After(30 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("the MaxRetry(1) task did not complete: runs %v", runs)
	}
	archived := map[string]*asynq.TaskInfo{}
	deadline := time.Now().Add(20 * time.Second)
	for len(archived) < 2 {
		tasks, err := insp.ListArchivedTasks("limits")
		if err == nil {
			for _, ti := range tasks {
				archived[ti.Type] = ti
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("archived %v (%v), want the zero and spent tasks", archived, err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, tc := range []struct {
		typ, says string
		runs      int
	}{
		{"zero", "asynq archives a task enqueued with MaxRetry(0) at its first failure, capacity deferrals included: enqueue LLM tasks with MaxRetry(1) or more", 1},
		{"spent", "used up its MaxRetry(1)", 2},
	} {
		ti := archived[tc.typ]
		if ti == nil || !strings.Contains(ti.LastErr, tc.says) || !strings.Contains(ti.LastErr, "rate_limited") {
			t.Errorf("%s: archived as %+v, want its error to say %q", tc.typ, ti, tc.says)
		}
		if len(runs[tc.typ]) != tc.runs || !noRetriesLeft[tc.typ] {
			t.Errorf("%s: %d runs (ErrNoRetriesLeft seen: %v), want %d", tc.typ, len(runs[tc.typ]), noRetriesLeft[tc.typ], tc.runs)
		}
	}
	if r := runs["one"]; len(r) != 3 || r[2].retried != 0 || r[2].attempt != 1 {
		t.Errorf("the MaxRetry(1) task ran %+v: want three runs, the two rate limits not counted", r)
	}
	if _, ok := archived["one"]; ok {
		t.Error("the MaxRetry(1) task was archived")
	}
}

// freshQueue empties queue now and once the test is over (after its deferred shutdowns), so
// that no task of an earlier run (-count=2) is counted.
func freshQueue(t *testing.T, redis asynq.RedisClientOpt, queue string) {
	t.Helper()
	drop := func() {
		insp := asynq.NewInspector(redis)
		defer insp.Close()
		if err := insp.DeleteQueue(queue, true); err != nil && !errors.Is(err, asynq.ErrQueueNotFound) {
			t.Errorf("emptying queue %s: %v", queue, err)
		}
	}
	drop()
	t.Cleanup(drop)
}

// A nil context is taken as no handler's, never a panic.
func TestNilContext_NeverPanics(t *testing.T) {
	var nilCtx context.Context
	if n := steadyasynq.Attempt(nilCtx); n != 1 {
		t.Fatalf("Attempt(nil) = %d", n)
	}
	err := &deferral.Error{Decision: deferral.Decision{Retry: true, Kind: providers.KindRateLimited}, Err: errors.New("429")}
	if got := steadyasynq.Result(nilCtx, err); got != error(err) {
		t.Fatalf("Result(nil, …) = %v", got)
	}
}
