package resilience

import (
	"context"
	"sync"
	"time"
)

// budgetFloor is the shortest a call waits for a fleet-wide per-minute limit the store says has no
// room: a store that answers "no room, and no wait" (a damaged bucket) makes a call wait, not
// ask again in a loop.
const budgetFloor = 10 * time.Millisecond

// fleet is a pipeline's share of fleet-wide per-minute limits (SharedBudgets): one lease per
// budget, under the name the pipeline shares under.
type fleet struct {
	store    SharedBudgets
	ev       *emitter
	p        *Pipeline
	req, tok lease
}

// lease is the units of one fleet-wide per-minute limit an instance took from the store and has not
// spent yet. A call spends from it without I/O; when it runs low a background refill takes
// the next batch; a call that finds it empty waits for that refill.
type lease struct {
	mu      sync.Mutex
	have    int64
	next    time.Time     // the store said no room before this time
	downAt  time.Time     // the store failed at this time (zero: it answers)
	err     error         // its error
	filling chan struct{} // closed when the running refill ends; nil when none runs
}

// take debits n units of the budget named budget (limit units per minute) for a call made
// with ctx, waiting when the lease is empty and the waits, together, fit limit(). A pipeline
// that stopped sharing (StopSharing) goes on under its own budget.
func (f *fleet) take(ctx context.Context, l *lease, budget string, perMinute, n int64, limit func() time.Duration) error {
	if f.p.sh.left.Load() {
		return nil
	}
	batch := max(perMinute/60, 1) // about a second of the limit
	var waited time.Duration
	for {
		now := f.ev.clock.Now()
		l.mu.Lock()
		if l.have >= n {
			l.have -= n
			if l.have < (batch+1)/2 && l.filling == nil && !l.down(now) && !now.Before(l.next) {
				f.refill(l, budget, perMinute, batch)
			}
			l.mu.Unlock()
			return nil
		}
		if l.down(now) {
			err := l.err
			l.mu.Unlock()
			if f.store.FailClosed() {
				return &SharedStateError{Pipeline: f.ev.name, Budget: budget, Err: err}
			}
			return nil // fail open: the instance's own budget already admitted the call
		}
		if wait := l.next.Sub(now); wait > 0 {
			l.mu.Unlock()
			if waited+wait > limit() {
				f.ev.emit(Event{Type: EventCooldownRejected, Delay: wait, Reason: "shared " + budget + " per minute", Context: ctx})
				return &CooldownError{Pipeline: f.ev.name, RetryAfter: wait, Budget: budget}
			}
			f.ev.emit(Event{Type: EventCooldownWaited, Delay: wait, Reason: "shared " + budget + " per minute", Context: ctx})
			if err := sleep(ctx, f.ev.clock, wait); err != nil {
				return err
			}
			waited += wait
			continue
		}
		done := l.filling
		if done == nil {
			done = f.refill(l, budget, perMinute, max(batch, n-l.have))
		}
		l.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// down reports whether the store failed within the last storeRetry. Callers hold mu.
func (l *lease) down(now time.Time) bool {
	return !l.downAt.IsZero() && now.Sub(l.downAt) < storeRetry
}

// refill starts taking want units from the store in the background and returns a channel
// closed when it ends. Callers hold mu.
func (f *fleet) refill(l *lease, budget string, perMinute, want int64) chan struct{} {
	done := make(chan struct{})
	l.filling = done
	go func() {
		now := f.ev.clock.Now()
		got, wait, err := f.store.TakeBudget(context.Background(), f.p.sh.name+":"+budget, perMinute, want, now)
		got = min(max(got, 0), want) // a store cannot grant more than asked, nor less than nothing
		l.mu.Lock()
		l.filling = nil
		l.have += got
		if err != nil {
			l.downAt, l.err = now, err
		} else {
			l.downAt, l.err = time.Time{}, nil
			l.next = time.Time{}
			if got < want {
				l.next = now.Add(boundWait(wait, want-got, perMinute))
			}
		}
		l.mu.Unlock()
		close(done)
	}()
	return done
}

// boundWait bounds the wait a store gave for missing units of a budget of perMinute units:
// no less than budgetFloor, no more than the time the budget takes to refill them plus
// SharedClockSkew, and that time itself when the store gave none.
func boundWait(wait time.Duration, missing, perMinute int64) time.Duration {
	refill := time.Duration(float64(missing) / float64(max(perMinute, 1)) * float64(time.Minute))
	if wait <= 0 {
		wait = refill
	}
	return max(min(wait, refill+SharedClockSkew), budgetFloor)
}

// debit takes n more units from the lease, which may go below zero: a call used more than
// its estimate, and the next calls wait for the difference.
func (l *lease) debit(n int64) {
	l.mu.Lock()
	l.have -= n
	l.mu.Unlock()
}
