package resilience

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// SharedState shares what one instance of an application learns about a provider with its
// other instances: that the provider's circuit opened, until when, that the fleet's probe
// closed it again, and that a 429 paused it, until when. Each instance keeps its own
// pipeline; the shared state is advice it adopts — an instance that hears "open until T"
// opens its circuit until T without paying its own threshold of failed calls, one that hears
// "closed at C" closes a circuit that opened before C, and one that hears "paused until T"
// pauses too.
//
// Implementations (github.com/steadyllm/steady/state/redis) must never put I/O on a call's
// path: Advice reads a local copy, refreshed in the background, and Advise sends in the
// background. Times are wall-clock times, comparable between machines up to SharedClockSkew.
//
// A pipeline trusts no advice: whatever a store returns, an adopted opening lasts at most the
// pipeline's own break (CircuitBreakerDurationSeconds) from when it began, and began at most
// SharedClockSkew in the future; a pause lasts at most RateLimitMaxPauseSeconds (and, cut at
// it, ends with one probe as a pause of its own would); a closing from further in the future
// than SharedClockSkew is ignored. Each value is adopted once, when it first appears: a
// repeated "paused until the year 2200" does not pause the pipeline again after its probe
// ended the pause. A pause adopted from advice that the store then shortens or drops is
// shortened or ended here too.
//
// A SharedState may also implement ProbeElection (one half-open probe for the fleet),
// SharedBudgets (one per-minute limit for the fleet) and SharedStateWatcher (events when
// the store is in trouble and when it recovers); a pipeline uses what it finds.
type SharedState interface {
	// Advise shares advice about the pipeline named name. It must not block.
	Advise(name string, a Advice)
	// Advice returns the latest advice about the pipeline named name that this instance
	// knows, zero when none. It must not block.
	Advice(name string) Advice
}

// Advice is what instances tell each other about a provider. A zero time means none.
//
// Stores merge advice so that it only ever grows: a pause or an opening is replaced by a
// longer one, and a closing by a later one. A closing ends the openings that began before it;
// an opening that began before the latest closing is stale and dropped (one that began at
// the same moment stands: the failures are at least as new as the probe).
type Advice struct {
	// OpenedAt and OpenUntil: the provider's circuit opened somewhere at OpenedAt; no calls
	// before OpenUntil.
	OpenedAt, OpenUntil time.Time
	// ClosedAt: the fleet's probe found the provider well again at this time.
	ClosedAt time.Time
	// CoolUntil: a 429 paused the provider somewhere; no calls before this time.
	CoolUntil time.Time
}

// Merge returns a combined with b by the rules above: the longer pause, the later closing,
// and the longer opening unless the closing ends it. Stores use it to keep their copies.
func (a Advice) Merge(b Advice) Advice {
	if b.CoolUntil.After(a.CoolUntil) {
		a.CoolUntil = b.CoolUntil
	}
	if b.ClosedAt.After(a.ClosedAt) {
		a.ClosedAt = b.ClosedAt
	}
	if b.OpenUntil.After(a.OpenUntil) {
		a.OpenedAt, a.OpenUntil = b.OpenedAt, b.OpenUntil
	}
	if !a.OpenUntil.IsZero() && a.OpenedAt.Before(a.ClosedAt) {
		a.OpenedAt, a.OpenUntil = time.Time{}, time.Time{}
	}
	return a
}

// ProbeElection is implemented by a SharedState that elects the one instance of the fleet
// that probes a provider whose break is over. A pipeline asks once per break, when its own
// circuit turns half-open and a call would become the probe; the other instances keep
// rejecting calls until the winner's outcome reaches them as advice (a closing or a new
// opening).
type ProbeElection interface {
	// ClaimProbe asks for the probe of the pipeline named name, held for at most hold. It
	// may block for the store's own short timeout. It reports mine when this instance holds
	// the probe; otherwise retry is how long the current holder may keep it. An error means
	// the store could not tell: the caller then probes on its own.
	ClaimProbe(ctx context.Context, name string, hold time.Duration) (mine bool, retry time.Duration, err error)
	// EndProbe gives the probe back once its outcome is known. It must not block.
	EndProbe(name string)
}

// SharedBudgets is implemented by a SharedState that keeps a pipeline's per-minute limits
// (PaceRequestsPerMinute, PaceTokensPerMinute, or the limits learnt from headers) for the
// whole fleet, so that N instances together stay within one limit rather than N. A pipeline
// leases units in batches (about a second of the limit) and spends them locally, so a call
// meets the store only when its instance's lease runs dry, and the lease is refilled in the
// background before it does.
type SharedBudgets interface {
	// TakeBudget takes up to want units, at once, from the budget named key, which holds
	// perMinute units and refills them evenly over a minute, at time now. It returns the units
	// taken and, when fewer than want, how long until the rest will be there. It may block
	// for the store's own short timeout.
	TakeBudget(ctx context.Context, key string, perMinute, want int64, now time.Time) (got int64, wait time.Duration, err error)
	// FailClosed reports what a pipeline does while the store cannot be reached: false (the
	// default) lets calls go on under the instance's own budgets; true refuses them with a
	// *SharedStateError.
	FailClosed() bool
}

// SharedStateWatcher is implemented by a SharedState that reports its own trouble: Watch
// registers f, to be called with the error when the store stops answering and with nil when it
// answers again, and returns a function that unregisters it. Each change is told to one
// watcher — the earliest registered that has not stopped — so that the N pipelines sharing
// through a store report it once, not N times: the pipelines turn it into
// EventSharedStateFailed and EventSharedStateRecovered, and Event.Pipeline names the pipeline
// that reported. Watchers keeps such a list for a store.
type SharedStateWatcher interface {
	Watch(f func(err error)) (stop func())
}

// Watchers is the list of watchers of a store (SharedStateWatcher) that tells each change to
// the earliest watcher that has not stopped. The zero value is ready; it is safe for
// concurrent use.
type Watchers struct {
	mu   sync.Mutex
	list []*watcher
}

type watcher struct{ f func(error) }

// Add registers f and returns the function that unregisters it (safe to call more than once).
func (w *Watchers) Add(f func(error)) (stop func()) {
	e := &watcher{f: f}
	w.mu.Lock()
	w.list = append(w.list, e)
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		for i, x := range w.list {
			if x == e {
				w.list = append(w.list[:i:i], w.list[i+1:]...)
				return
			}
		}
	}
}

// Notify tells err (nil: recovered) to the earliest watcher still registered, if any. It calls
// the watcher outside its lock.
func (w *Watchers) Notify(err error) {
	w.mu.Lock()
	var f func(error)
	if len(w.list) > 0 {
		f = w.list[0].f
	}
	w.mu.Unlock()
	if f != nil {
		f(err)
	}
}

// SharedStateJoiner is implemented by a SharedState that keeps a local copy of the advice
// about the pipelines that use it. Join tells it that a pipeline shares under name from now
// on and reads the fleet's advice about name at once (bounded by the store's own timeout, and
// by ctx), so that the pipeline's first call, and its first CircuitInfo, know what the fleet
// knows; an error means the store could not be read (the pipeline goes on without). Leave
// undoes one Join: a name that no pipeline shares under any more is not refreshed any more.
// Calls are counted: two Joins of one name need two Leaves.
type SharedStateJoiner interface {
	Join(ctx context.Context, name string) error
	Leave(name string)
}

// SharedScoper is implemented by a SharedState that decides how a pipeline's sharing scope
// (SetSharedScope) enters the name it shares under. ScopedName returns that name for the
// pipeline named name in scope (never ""). A store without it shares under name+"@"+scope.
// A store that returns name alone shares between every pipeline of that name, whatever it
// calls: what a store with an explicit key prefix does.
type SharedScoper interface {
	ScopedName(name, scope string) string
}

// SharedClockSkew is how far apart the clocks of the instances sharing a store may be
// without changing what they share by more than the difference: an opening or a pause that
// another instance reports as starting up to SharedClockSkew in the future is taken as it
// is, and lasts at most that much longer than its duration; one from further ahead is taken
// as starting SharedClockSkew from now. Stores refill fleet-wide per-minute limits on the callers'
// clocks, so skew within the bound lets the fleet spend at most SharedClockSkew × the rate
// more than the limit, once; a budget's time further in the future than the bound is taken
// as the caller's now.
const SharedClockSkew = 5 * time.Second

// SharedHorizon is the furthest in the future a shared time may lie: the longest break and the
// longest pause a pipeline may be configured with (a day), plus SharedClockSkew. A store
// treats a stored time beyond its now plus SharedHorizon as garbage.
const SharedHorizon = 24*time.Hour + SharedClockSkew

// ErrSharedStateUnavailable matches a *SharedStateError.
var ErrSharedStateUnavailable = errors.New("resilience: shared state unavailable")

// SharedStateError is returned, for a store that fails closed (SharedBudgets.FailClosed),
// when a call needs room in a fleet-wide per-minute limit and the store cannot be reached.
type SharedStateError struct {
	Pipeline string
	Budget   string // "requests" or "tokens"
	Err      error  // the store's error
}

func (e *SharedStateError) Error() string {
	return fmt.Sprintf("resilience: %q cannot reach the shared %s budget (%v): call not sent", e.Pipeline, e.Budget, e.Err)
}

// Unwrap returns the store's error.
func (e *SharedStateError) Unwrap() error { return e.Err }

// Is reports whether target is ErrSharedStateUnavailable.
func (e *SharedStateError) Is(target error) bool { return target == ErrSharedStateUnavailable }

// ErrorKind names the failure in the vocabulary of steady's error kinds: a rate limit, as
// the budget could not grant room (another provider may).
func (e *SharedStateError) ErrorKind() string { return "rate_limited" }

// RetryAfterHint is how long the pipeline waits before asking the store again.
func (e *SharedStateError) RetryAfterHint() time.Duration { return storeRetry }

// WithSharedState shares the pipeline's circuit openings and closings, rate-limit pauses
// and, when s implements SharedBudgets, per-minute limits through s, under the pipeline's
// name (WithName), or the name its scope gives it (SetSharedScope), and adopts the others'.
// A pipeline without a name cannot share. The pipeline joins s (SharedStateJoiner) at its
// first call, first read of its circuit, or SetSharedScope, whichever comes first, and leaves
// it at StopSharing.
func WithSharedState(s SharedState) Option { return func(p *Pipeline) { p.shared = s } }
