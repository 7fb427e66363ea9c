package steadyriver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	steadyriver "github.com/steadyllm/steady/queue/river"
	"github.com/steadyllm/steady/resilience"
)

// reportArgs is a job that asks for a report on Topic.
type reportArgs struct {
	Topic string `json:"topic"`
}

func (reportArgs) Kind() string { return "report" }

// startRiver runs a River client over a fresh schema with the workers until the test ends, and
// subscribes to the jobs' ends.
func startRiver(t *testing.T, workers *river.Workers) (*river.Client[pgx.Tx], <-chan *river.Event) {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "DELETE FROM river_job"); err != nil {
		t.Fatal(err)
	}
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
	t.Cleanup(cancel)
	if err := rc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopCtx, c := context.WithTimeout(ctx, 10*time.Second)
		defer c()
		_ = rc.Stop(stopCtx)
	})
	return rc, events
}

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

// nextEnd waits for the next end of a job.
func nextEnd(t *testing.T, events <-chan *river.Event) *river.Event {
	t.Helper()
	select {
	case ev := <-events:
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no job ended")
		return nil
	}
}

// A job asks for its answer once and snoozes; its looks — one after a 429 on the read, one
// that finds the answer in progress — snooze it again, using no attempt, and the last one hands
// the answer to Done. The provider sees the prompt once.
func TestBackground_AsksOnceThenLooksUntilTheAnswerIsDone(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("The report."),
		mocks.WithRouteScript(mocks.RouteStoredResponses, mocks.RateLimited(300*time.Millisecond)))
	defer s.Close()
	c := responsesClient(t, s)
	done := make(chan *providers.ChatResponse, 2)
	workers := river.NewWorkers()
	river.AddWorker[reportArgs](workers, &steadyriver.Background[reportArgs]{Client: c,
		Ask: func(_ context.Context, job *river.Job[reportArgs]) (*providers.ChatRequest, error) {
			return &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: job.Args.Topic}}}, nil
		},
		Done: func(_ context.Context, job *river.Job[reportArgs], resp *providers.ChatResponse) error {
			done <- resp
			return nil
		},
		Decider: deferral.Decider{PollFirst: 100 * time.Millisecond}})
	rc, events := startRiver(t, workers)
	if _, err := rc.Insert(context.Background(), reportArgs{Topic: "the quarterly report"}, &river.InsertOpts{MaxAttempts: 3}); err != nil {
		t.Fatal(err)
	}
	ev := nextEnd(t, events)
	if ev.Kind != river.EventKindJobCompleted {
		t.Fatalf("%s: %v", ev.Kind, ev.Job.Errors)
	}
	resp := <-done
	if resp.Message.Content != "The report." || resp.Status != providers.StatusCompleted {
		t.Fatalf("%+v", resp)
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
	// The ask; the first look (429: snoozed), its rerun (in progress: snoozed), the next look.
	if posts != 1 || gets != 3 || ev.Job.Attempt != 1 {
		t.Fatalf("%d POSTs, %d GETs, attempt %d", posts, gets, ev.Job.Attempt)
	}
	var meta struct {
		Awaiting deferral.Awaiting `json:"steady_awaiting"`
		Snoozes  int               `json:"snoozes"`
	}
	if err := json.Unmarshal(ev.Job.Metadata, &meta); err != nil || meta.Awaiting.Polls != 1 || meta.Snoozes != 3 {
		t.Fatalf("metadata %s: %v", ev.Job.Metadata, err)
	}
}

// A job whose answer is gone, and one whose metadata is forged or garbled, are cancelled: the
// first after one look, the others before anything is sent to any endpoint.
func TestBackground_GoneAndForgedJobsAreCancelled(t *testing.T) {
	s := mocks.NewServer(mocks.WithScript(mocks.Step{Expire: true}))
	defer s.Close()
	c := responsesClient(t, s)
	called := make(chan struct{}, 4)
	workers := river.NewWorkers()
	river.AddWorker[reportArgs](workers, &steadyriver.Background[reportArgs]{Client: c,
		Ask: func(_ context.Context, job *river.Job[reportArgs]) (*providers.ChatRequest, error) {
			return &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: job.Args.Topic}}}, nil
		},
		Done: func(context.Context, *river.Job[reportArgs], *providers.ChatResponse) error {
			called <- struct{}{}
			return nil
		},
		Decider: deferral.Decider{PollFirst: 100 * time.Millisecond}})
	rc, events := startRiver(t, workers)
	ctx := context.Background()
	if _, err := rc.Insert(ctx, reportArgs{Topic: "gone soon"}, &river.InsertOpts{MaxAttempts: 3}); err != nil {
		t.Fatal(err)
	}
	ev := nextEnd(t, events)
	if ev.Kind != river.EventKindJobCancelled || !lastError(ev.Job, "is gone") || s.Journal().Len() != 2 {
		t.Fatalf("%s after %d requests: %v", ev.Kind, s.Journal().Len(), ev.Job.Errors)
	}
	sent := s.Journal().Len()
	origin := c.Provider("openai").(providers.Scoper).SharingScope()
	for _, meta := range []string{
		`{"steady_awaiting":{"v":1,"id":"resp_fake0000000000000001","origin":"` + strings.Repeat("f", 32) + `","polls":0,"started":"2026-01-01T00:00:00Z"}}`,
		`{"steady_awaiting":{"v":1,"id":"../../v1/files","origin":"` + origin + `","polls":0,"started":"2026-01-01T00:00:00Z"}}`,
		`{"steady_awaiting":"not an awaiting"}`,
	} {
		if _, err := rc.Insert(ctx, reportArgs{Topic: "forged"}, &river.InsertOpts{MaxAttempts: 3, Metadata: []byte(meta)}); err != nil {
			t.Fatal(err)
		}
		ev := nextEnd(t, events)
		if ev.Kind != river.EventKindJobCancelled || !lastError(ev.Job, "bad_request") {
			t.Fatalf("%s: %s: %v", meta, ev.Kind, ev.Job.Errors)
		}
	}
	if s.Journal().Len() != sent || len(called) != 0 {
		t.Fatalf("%d requests sent for forged jobs, Done called %d times", s.Journal().Len()-sent, len(called))
	}
}

// lastError reports whether the last error recorded on job mentions text.
func lastError(job *rivertype.JobRow, text string) bool {
	return len(job.Errors) > 0 && strings.Contains(job.Errors[len(job.Errors)-1].Error, text)
}
