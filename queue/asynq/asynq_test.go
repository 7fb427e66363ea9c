package steadyasynq_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	steadyasynq "github.com/steadyllm/steady/queue/asynq"
	"github.com/steadyllm/steady/resilience"
)

var redisAddr string

// TestMain starts a redis-server of its own (see internal/testkit/backend): without one the tests are
// skipped, except under CI, where they must run.
func TestMain(m *testing.M) {
	r := backend.StartRedis()
	redisAddr = r.Addr
	code := m.Run()
	r.Stop()
	os.Exit(code)
}

// run is one handler run: when it began and what steady's attempt number was.
type run struct {
	at      time.Time
	attempt int
	retried int
}

// A task whose call meets a 429 with a hint comes back at the hint, without counting an
// attempt, and completes; a task whose call is refused for good is archived after one run.
func TestAsynq_RetriesAtTheDueTimeAndArchivesPermanentFailures(t *testing.T) {
	limited := mocks.NewServer(mocks.WithScript(mocks.RateLimited(1500*time.Millisecond), mocks.OK()))
	defer limited.Close()
	refused := mocks.NewServer(mocks.WithAPIKey("another key"))
	defer refused.Close()
	o := resilience.DefaultOptions()
	c, err := client.New(
		client.WithProvider("ok", o, factory(limited)),
		client.WithProvider("refused", o, factory(refused)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()

	redis := asynq.RedisClientOpt{Addr: redisAddr}
	freshQueue(t, redis, "default")
	var mu sync.Mutex
	runs := map[string][]run{}
	done := make(chan string, 4)
	mux := asynq.NewServeMux()
	handle := func(provider string) asynq.HandlerFunc {
		return func(ctx context.Context, task *asynq.Task) error {
			retried, _ := asynq.GetRetryCount(ctx)
			mu.Lock()
			runs[task.Type()] = append(runs[task.Type()], run{time.Now(), steadyasynq.Attempt(ctx), retried})
			mu.Unlock()
			_, err := c.Chat(ctx, &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "summarise"}}},
				client.Deferred(steadyasynq.Attempt(ctx)), client.WithProviders(provider))
			if err == nil {
				done <- task.Type()
			}
			return steadyasynq.Result(ctx, err)
		}
	}
	mux.HandleFunc("summarise", handle("ok"))
	mux.HandleFunc("doomed", handle("refused"))
	srv := asynq.NewServer(redis, asynq.Config{
		Concurrency:              2,
		RetryDelayFunc:           steadyasynq.RetryDelayFunc(nil),
		IsFailure:                steadyasynq.IsFailure,
		DelayedTaskCheckInterval: 100 * time.Millisecond,
		Logger:                   quiet{},
	})
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	enq := asynq.NewClient(redis)
	defer enq.Close()
	for _, typ := range []string{"summarise", "doomed"} {
		if _, err := enq.Enqueue(asynq.NewTask(typ, nil), asynq.MaxRetry(3)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case typ := <-done:
		if typ != "summarise" {
			t.Fatalf("%s completed", typ)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the task did not complete: runs %v", runs)
	}
	mu.Lock()
	sum := runs["summarise"]
	mu.Unlock()
	if len(sum) != 2 || sum[1].at.Sub(sum[0].at) < 1400*time.Millisecond || sum[1].retried != 0 || sum[1].attempt != 1 {
		t.Fatalf("summarise runs %+v: want two, the second after the 1.5 s hint, not counted as a retry", sum)
	}
	if limited.Journal().Len() != 2 {
		t.Fatalf("the provider saw %d requests, want 2 (no in-process retry)", limited.Journal().Len())
	}
	insp := asynq.NewInspector(redis)
	defer insp.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		archived, err := insp.ListArchivedTasks("default")
		if err == nil && len(archived) == 1 && archived[0].Type == "doomed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the doomed task was not archived: %v %v", archived, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := len(runs["doomed"]); n != 1 || refused.Journal().Len() != 1 {
		t.Fatalf("the doomed task ran %d times (%d requests): a permanent failure must not be retried", n, refused.Journal().Len())
	}
}

func factory(s *mocks.Server) client.ProviderFactory {
	return func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: "openai", BaseURL: s.OpenAIBaseURL(), APIKey: "sk-test", HTTPClient: hc, Model: "gpt-4o-mini"})
	}
}

// quiet is an asynq logger that says nothing.
type quiet struct{}

func (quiet) Debug(...any) {}
func (quiet) Info(...any)  {}
func (quiet) Warn(...any)  {}
func (quiet) Error(...any) {}
func (quiet) Fatal(...any) {}

// A task whose call a budget refuses waits for the budget's window to end without using a
// retry — as a rate limit does — and its decision names the budget: the refusal is the
// application's policy, not the task's failure.
func TestAsynq_ABudgetRefusalWaitsForItsWindowWithoutUsingARetry(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("ok"))
	defer s.Close()
	prices, err := cost.NewPrices("USD", []cost.Entry{{Provider: "openai", Model: "gpt-4o-mini", Price: cost.PerMillion(2.5, 10)}})
	if err != nil {
		t.Fatal(err)
	}
	limit, _ := providers.ParseMoney("0.001")
	clock := backend.NewManualClock() // the ledger's windows turn on it; asynq waits in real time
	clock.Advance(58 * time.Second)   // two seconds before the minute ends
	c, err := client.New(client.WithProvider("openai", resilience.DefaultOptions(), factory(s)), client.WithClock(clock),
		client.WithPrices(prices), client.WithBudgets(cost.LedgerOptions{}, cost.Budget{Name: "per-minute", Window: cost.Minute, Limit: limit}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ask := func(ctx context.Context, opts ...client.CallOption) error {
		// 3 prompt tokens and up to 99 answer tokens: an estimate of 0.0009975, which fits
		// the limit alone but not after another call's spend.
		_, err := c.Chat(ctx, &providers.ChatRequest{MaxTokens: 99, Messages: []providers.Message{{Role: providers.RoleUser, Content: "hello there"}}}, opts...)
		return err
	}
	// Spends the minute's first few tokens, and teaches the route how the fake counts them
	// (its first estimate, in the chat format, is a few tokens above the fake's 3).
	if _, err := c.Chat(context.Background(), &providers.ChatRequest{MaxTokens: 1,
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "hello there"}}}); err != nil {
		t.Fatal(err)
	}

	redis := asynq.RedisClientOpt{Addr: redisAddr}
	freshQueue(t, redis, "default")
	var mu sync.Mutex
	var runs []run
	var decisions []deferral.Decision
	done := make(chan struct{})
	mux := asynq.NewServeMux()
	mux.HandleFunc("budgeted", func(ctx context.Context, task *asynq.Task) error {
		retried, _ := asynq.GetRetryCount(ctx)
		mu.Lock()
		runs = append(runs, run{time.Now(), steadyasynq.Attempt(ctx), retried})
		mu.Unlock()
		err := ask(ctx, client.Deferred(steadyasynq.Attempt(ctx)))
		var de *deferral.Error
		if errors.As(err, &de) {
			mu.Lock()
			decisions = append(decisions, de.Decision)
			mu.Unlock()
			clock.Advance(time.Minute) // by the time the task comes back, the window has turned
		}
		if err == nil {
			close(done)
		}
		return steadyasynq.Result(ctx, err)
	})
	srv := asynq.NewServer(redis, asynq.Config{Concurrency: 1, RetryDelayFunc: steadyasynq.RetryDelayFunc(nil),
		IsFailure: steadyasynq.IsFailure, DelayedTaskCheckInterval: 100 * time.Millisecond, Logger: quiet{}})
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	enq := asynq.NewClient(redis)
	defer enq.Close()
	if _, err := enq.Enqueue(asynq.NewTask("budgeted", nil), asynq.MaxRetry(1)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the task did not complete")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(decisions) != 1 || decisions[0].Kind != providers.KindBudgetExhausted || decisions[0].Delay != 2*time.Second ||
		!strings.Contains(decisions[0].Reason, `budget "per-minute"`) {
		t.Fatalf("decisions %+v", decisions)
	}
	if len(runs) != 2 || runs[1].retried != 0 || runs[1].attempt != 1 {
		t.Fatalf("runs %+v: want two, the second not counted as a retry", runs)
	}
}
