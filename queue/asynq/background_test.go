package steadyasynq_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	steadyasynq "github.com/steadyllm/steady/queue/asynq"
	"github.com/steadyllm/steady/resilience"
)

// responsesClient is a client of one provider on s's Responses API.
func responsesClient(t *testing.T, s *mocks.Server) *client.Client {
	t.Helper()
	c, err := client.New(client.WithProvider("openai", resilience.DefaultOptions(), func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: "openai", API: openai.Responses, BaseURL: s.OpenAIBaseURL(), APIKey: "sk-test",
			HTTPClient: hc, Model: "gpt-5"})
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// ask builds the request of a task from its payload.
func ask(_ context.Context, t *asynq.Task) (*providers.ChatRequest, error) {
	return &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: string(t.Payload())}}}, nil
}

// startServer runs a server with the handlers of mux on queue until the test ends.
func startServer(t *testing.T, redis asynq.RedisClientOpt, queue string, mux *asynq.ServeMux) {
	t.Helper()
	srv := asynq.NewServer(redis, asynq.Config{
		Concurrency:              2,
		Queues:                   map[string]int{queue: 1},
		RetryDelayFunc:           steadyasynq.RetryDelayFunc(nil),
		IsFailure:                steadyasynq.IsFailure,
		DelayedTaskCheckInterval: 100 * time.Millisecond,
		Logger:                   quiet{},
	})
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
}

// A task asks for its answer once and returns; the looks that follow — one after a 429 on the
// read, retried at the hint without counting, one that finds the answer in progress — free the
// worker between them, and the last one hands the answer to Done. The provider sees the prompt
// once.
func TestBackground_AsksOnceThenLooksUntilTheAnswerIsDone(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("The report."),
		mocks.WithRouteScript(mocks.RouteStoredResponses, mocks.RateLimited(500*time.Millisecond)))
	defer s.Close()
	c := responsesClient(t, s)
	redis := asynq.RedisClientOpt{Addr: redisAddr}
	freshQueue(t, redis, "reports")
	enq := asynq.NewClient(redis)
	defer enq.Close()

	var mu sync.Mutex
	var looks []string // the AwaitingHeader of each run, "" for the first
	done := make(chan *providers.ChatResponse, 2)
	bg := &steadyasynq.Background{Client: c, Enqueuer: enq, Ask: ask,
		Done: func(_ context.Context, t *asynq.Task, resp *providers.ChatResponse) error {
			if string(t.Payload()) != "the quarterly report" {
				return errors.New("the payload was lost")
			}
			done <- resp
			return nil
		},
		Decider: deferral.Decider{PollFirst: 100 * time.Millisecond}}
	mux := asynq.NewServeMux()
	mux.HandleFunc("report", func(ctx context.Context, t *asynq.Task) error {
		mu.Lock()
		looks = append(looks, t.Headers()[steadyasynq.AwaitingHeader])
		mu.Unlock()
		return bg.ProcessTask(ctx, t)
	})
	startServer(t, redis, "reports", mux)
	if _, err := enq.Enqueue(asynq.NewTask("report", []byte("the quarterly report")), asynq.Queue("reports"), asynq.MaxRetry(2)); err != nil {
		t.Fatal(err)
	}
	select {
	case resp := <-done:
		if resp.Message.Content != "The report." || resp.Status != providers.StatusCompleted {
			t.Fatalf("%+v", resp)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no answer: %d requests, runs %q", s.Journal().Len(), looks)
	}
	var posts, gets int
	for _, r := range s.Journal().Requests() {
		switch r.Method {
		case http.MethodPost:
			posts++
		case http.MethodGet:
			gets++
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// The ask; the first look (429), its retry (in progress), the next look (completed).
	if posts != 1 || gets != 3 || len(looks) != 4 || looks[0] != "" {
		t.Fatalf("%d POSTs, %d GETs, runs %q", posts, gets, looks)
	}
	var polls []int
	for _, h := range looks[1:] {
		a, err := deferral.ParseAwaiting([]byte(h))
		if err != nil {
			t.Fatal(err)
		}
		polls = append(polls, a.Polls)
	}
	if polls[0] != 0 || polls[1] != 0 || polls[2] != 1 {
		t.Fatalf("looks %v: the retried look keeps its header, the next one counts one more", polls)
	}
}

// A task whose answer is gone, and one whose header is forged or garbled, are archived: the
// first after one look, the others before anything is sent to any endpoint.
func TestBackground_GoneAndForgedTasksAreArchived(t *testing.T) {
	s := mocks.NewServer(mocks.WithScript(mocks.Step{Expire: true}))
	defer s.Close()
	c := responsesClient(t, s)
	redis := asynq.RedisClientOpt{Addr: redisAddr}
	freshQueue(t, redis, "doomed")
	enq := asynq.NewClient(redis)
	defer enq.Close()
	called := make(chan struct{}, 4)
	mux := asynq.NewServeMux()
	mux.Handle("report", &steadyasynq.Background{Client: c, Enqueuer: enq, Ask: ask, Decider: deferral.Decider{PollFirst: 100 * time.Millisecond},
		Done: func(context.Context, *asynq.Task, *providers.ChatResponse) error { called <- struct{}{}; return nil }})
	startServer(t, redis, "doomed", mux)

	if _, err := enq.Enqueue(asynq.NewTask("report", []byte("gone soon")), asynq.Queue("doomed"), asynq.MaxRetry(3)); err != nil {
		t.Fatal(err)
	}
	waitArchived(t, redis, "doomed", 1)
	if n := s.Journal().Len(); n != 2 {
		t.Fatalf("%d requests: want the ask and one look", n)
	}
	sent := s.Journal().Len()
	origin := c.Provider("openai").(providers.Scoper).SharingScope()
	forged := func(id, org string) string {
		data, err := json.Marshal(deferral.Awaiting{Stored: providers.StoredResponse{ID: id, Origin: org}, Started: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	for _, h := range []string{
		forged("resp_fake0000000000000001", strings.Repeat("f", 32)), // another origin
		`{"v":1,"id":"../../v1/files","origin":"` + origin + `","polls":0,"started":"2026-01-01T00:00:00Z"}`,
		"not an awaiting",
	} {
		task := asynq.NewTaskWithHeaders("report", []byte("forged"), map[string]string{steadyasynq.AwaitingHeader: h})
		if _, err := enq.Enqueue(task, asynq.Queue("doomed"), asynq.MaxRetry(3)); err != nil {
			t.Fatal(err)
		}
	}
	archived := waitArchived(t, redis, "doomed", 4)
	if s.Journal().Len() != sent || len(called) != 0 {
		t.Fatalf("%d requests sent for forged tasks, Done called %d times", s.Journal().Len()-sent, len(called))
	}
	for _, a := range archived {
		if a.Retried != 0 || !(strings.Contains(a.LastErr, "is gone") || strings.Contains(a.LastErr, "bad_request")) {
			t.Errorf("archived after %d retries: %s", a.Retried, a.LastErr)
		}
	}
}

// waitArchived waits until queue holds n archived tasks, and returns them.
func waitArchived(t *testing.T, redis asynq.RedisClientOpt, queue string, n int) []*asynq.TaskInfo {
	t.Helper()
	insp := asynq.NewInspector(redis)
	defer insp.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		archived, err := insp.ListArchivedTasks(queue)
		if err == nil && len(archived) == n {
			return archived
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d archived tasks, want %d: %v", len(archived), n, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// enqueuer fails every enqueue with err.
type enqueuer struct{ err error }

func (e enqueuer) EnqueueContext(context.Context, *asynq.Task, ...asynq.Option) (*asynq.TaskInfo, error) {
	return nil, e.err
}

// A first run that cannot enqueue the first look cancels the answer it started and fails, so
// that no answer is produced for nobody; a look already enqueued (its task ID taken) is no
// failure.
func TestBackground_AnAnswerNobodyWouldLookAtIsCancelled(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	c := responsesClient(t, s)
	task := asynq.NewTask("report", []byte("hello"))
	bg := &steadyasynq.Background{Client: c, Enqueuer: enqueuer{errors.New("redis is down")}, Ask: ask,
		Done: func(context.Context, *asynq.Task, *providers.ChatResponse) error { return nil }}
	err := bg.ProcessTask(context.Background(), task)
	if err == nil || !strings.Contains(err.Error(), "redis is down") || !strings.Contains(err.Error(), "was cancelled") {
		t.Fatalf("%v", err)
	}
	if last, _ := s.Journal().Last(); s.Journal().Len() != 2 || !strings.HasSuffix(last.Path, "/cancel") {
		t.Fatalf("%d requests, last %s", s.Journal().Len(), last.Path)
	}
	bg.Enqueuer = enqueuer{asynq.ErrTaskIDConflict}
	if err := bg.ProcessTask(context.Background(), task); err != nil || s.Journal().Len() != 3 {
		t.Fatalf("%v (%d requests)", err, s.Journal().Len())
	}
	if err := (&steadyasynq.Background{}).ProcessTask(context.Background(), task); err == nil {
		t.Fatal("a Background without its fields ran")
	}
}
