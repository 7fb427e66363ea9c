package steadyriver_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	steadyriver "github.com/steadyllm/steady/queue/river"
	"github.com/steadyllm/steady/resilience"
)

// failing is a worker whose every run fails with err.
type failing struct {
	river.WorkerDefaults[summariseArgs]
	err error
}

func (f *failing) Work(context.Context, *river.Job[summariseArgs]) error { return f.err }

func deferred(k providers.ErrorKind, at time.Time) error {
	return &deferral.Error{Decision: deferral.Decision{Retry: true, At: at, Kind: k}, Err: &providers.Error{Kind: k}}
}

func job(attempt, maxAttempts int) *river.Job[summariseArgs] {
	return &river.Job[summariseArgs]{JobRow: &rivertype.JobRow{ID: 7, Attempt: attempt, MaxAttempts: maxAttempts}}
}

// What the wrapper hands River — a snooze, or the due time of a counted retry — is never
// sooner than MinDelay after Work returned (a snooze of 0 makes the job available at once, in
// a loop; a due time River finds past makes it fall back to its own policy) and never later
// than MaxDelay (a due time centuries away parks the job for good), whatever the decision says.
func TestWork_HandsRiverATimeWithinMinDelayAndMaxDelay(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   time.Time
	}{
		{"due centuries away", time.Now().AddDate(400, 0, 0)},
		{"due in the year 200000", time.Date(200000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"due an hour ago", time.Now().Add(-time.Hour)},
		{"no due time (a decision made by hand)", time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := steadyriver.Wrap[summariseArgs](&failing{err: deferred(providers.KindRateLimited, tc.at)})
			var snooze *rivertype.JobSnoozeError
			if err := w.Work(context.Background(), job(1, 5)); !errors.As(err, &snooze) ||
				snooze.Duration < deferral.MinDelay || snooze.Duration > deferral.MaxDelay {
				t.Errorf("a capacity deferral: %v, want a snooze within [%v, %v]", err, deferral.MinDelay, deferral.MaxDelay)
			}

			w = steadyriver.Wrap[summariseArgs](&failing{err: deferred(providers.KindOverloaded, tc.at)})
			j := job(1, 5)
			before := time.Now()
			if err := w.Work(context.Background(), j); err == nil || errors.As(err, &snooze) {
				t.Fatalf("a counted deferral: %v, want the error itself", err)
			}
			returned := time.Now()
			next := w.NextRetry(j)
			if next.Before(before.Add(deferral.MinDelay)) || next.After(returned.Add(deferral.MaxDelay)) {
				t.Errorf("a counted deferral is due at %v, want within [%v, %v]", next, before.Add(deferral.MinDelay), returned.Add(deferral.MaxDelay))
			}
		})
	}
}

// On its last attempt a job's due time is not remembered: River does not ask NextRetry for a
// job it discards, and a remembered time would stay in the wrapper for ever.
func TestWork_DoesNotRememberTheDueTimeOfAJobsLastAttempt(t *testing.T) {
	w := steadyriver.Wrap[summariseArgs](&failing{err: deferred(providers.KindOverloaded, time.Now().Add(time.Minute))})
	j := job(5, 5)
	if err := w.Work(context.Background(), j); err == nil {
		t.Fatal("no error")
	}
	if next := w.NextRetry(j); !next.IsZero() {
		t.Errorf("the last attempt's due time %v was remembered", next)
	}
	j = job(4, 5)
	_ = w.Work(context.Background(), j)
	if next := w.NextRetry(j); next.IsZero() {
		t.Error("an attempt with attempts left has no due time")
	}
}

// budgetWorker's every run is a call that a budget refuses (its estimate alone is past the
// limit), to the fake server over loopback.
type budgetWorker struct {
	river.WorkerDefaults[summariseArgs]
	c *client.Client
}

func (w *budgetWorker) Work(ctx context.Context, job *river.Job[summariseArgs]) error {
	_, err := w.c.Chat(ctx, &providers.ChatRequest{MaxTokens: 100, Messages: []providers.Message{{Role: providers.RoleUser, Content: "hello there"}}},
		client.Deferred(job.Attempt))
	return err
}

// A job whose call a budget refuses is snoozed until the budget's window ends — a free wait, as
// for a rate limit, not a counted attempt — and a monthly budget's wait is cut to a day
// (deferral.MaxDelay): the job looks again daily, still using no attempt.
func TestWork_ABudgetRefusalIsSnoozedToTheWindowsEnd(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("ok"))
	defer s.Close()
	prices, err := cost.NewPrices("USD", []cost.Entry{{Provider: "openai", Model: "gpt-4o-mini", Price: cost.PerMillion(2.5, 10)}})
	if err != nil {
		t.Fatal(err)
	}
	limit, _ := providers.ParseMoney("0.0001")
	for _, tc := range []struct {
		window   cost.Window
		min, max time.Duration
	}{
		{cost.Hour, 44 * time.Minute, 45 * time.Minute}, // 08:15: the hour ends in 45 minutes
		{cost.Month, deferral.MaxDelay - time.Minute, deferral.MaxDelay},
	} {
		clock := backend.NewManualClock() // 2027-01-15 08:00:00 UTC
		clock.Advance(15 * time.Minute)
		c, err := client.New(client.WithProvider("openai", resilience.DefaultOptions(), factory(s)), client.WithClock(clock),
			client.WithPrices(prices), client.WithBudgets(cost.LedgerOptions{}, cost.Budget{Name: "b", Window: tc.window, Limit: limit}))
		if err != nil {
			t.Fatal(err)
		}
		w := steadyriver.Wrap[summariseArgs](&budgetWorker{c: c})
		j := job(1, 5)
		var snooze *rivertype.JobSnoozeError
		if err := w.Work(context.Background(), j); !errors.As(err, &snooze) || snooze.Duration < tc.min || snooze.Duration > tc.max {
			t.Errorf("%s budget: %v, want a snooze within [%v, %v]", tc.window, err, tc.min, tc.max)
		}
		if next := w.NextRetry(j); !next.IsZero() {
			t.Errorf("%s budget: a counted retry due at %v", tc.window, next)
		}
		_ = c.Close()
	}
}
