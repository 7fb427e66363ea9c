package statuspage

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/steadyllm/steady/internal/redact"
	"github.com/steadyllm/steady/resilience"
)

// The bounds of the events a page keeps (WithEvents).
const (
	// DefaultEvents is how many of the latest events a page keeps and shows.
	DefaultEvents = 50
	// MaxEvents is the most WithEvents allows.
	MaxEvents = 1000
)

// maxDetail bounds the text of one event's detail, error text included.
const maxDetail = 160

// maxName bounds a name the page shows (a deployment, a model, a pipeline).
const maxName = 128

// ring keeps the latest notable events of the client's pipelines. Writers — the goroutines of
// calls — take no lock: each claims a sequence number with one atomic add and publishes its
// record into the slot it owns with one atomic store. A reader walks back from the newest
// number and keeps the records whose number is the one it expects in that slot, so a slot
// being overwritten by a newer event is skipped rather than read torn.
type ring struct {
	next  atomic.Uint64
	slots []atomic.Pointer[record]
}

// record is one kept event: a copy of the pipeline's event without its context, and the
// page's redacted rendering of it, made at the first read (never on the call's path).
type record struct {
	seq  uint64
	ev   resilience.Event
	view atomic.Pointer[Event]
}

func newRing(n int) *ring { return &ring{slots: make([]atomic.Pointer[record], n)} }

// watched are the events the page listens to: what goes wrong and what the pipelines do about
// it. The events of every call that goes well (an attempt started, a slot given) and of every
// call an open circuit or a pause turns away are left out, so that the pipelines do not even
// build them for the page; an attempt's end is in, since only it tells a refused key or a bad
// request, and observe keeps it only when it failed.
var watched = []resilience.EventType{resilience.EventAttemptFinished, resilience.EventRetryScheduled,
	resilience.EventGaveUp, resilience.EventTimeout, resilience.EventBreakerStateChanged, resilience.EventBulkheadRejected,
	resilience.EventCooldownStarted, resilience.EventSharedStateFailed, resilience.EventSharedStateRecovered,
	resilience.EventProbeFinished, resilience.EventConcurrencyLimitChanged}

// observe is the watcher the page adds to the client while it is mounted. An event that is
// not notable (a served attempt) is dropped at once without allocating; a notable one costs
// one small allocation and two atomic operations.
func (r *ring) observe(e resilience.Event) {
	if !notable(&e) {
		return
	}
	e.Context = nil // an observer must not keep it
	rec := &record{ev: e}
	rec.seq = r.next.Add(1) - 1
	r.slots[rec.seq%uint64(len(r.slots))].Store(rec)
}

// seen returns how many notable events were recorded in all, kept or dropped.
func (r *ring) seen() uint64 { return r.next.Load() }

// latest returns the kept events, newest first, rendered and redacted by s.
func (r *ring) latest(s redact.Scrubber) []Event {
	n := r.next.Load()
	size := uint64(len(r.slots))
	out := make([]Event, 0, min(n, size))
	for i := n; i > 0 && n-i < size; i-- {
		seq := i - 1
		rec := r.slots[seq%size].Load()
		if rec == nil || rec.seq != seq {
			continue // not yet published, or already replaced by a newer event
		}
		v := rec.view.Load()
		if v == nil {
			v = describe(&rec.ev, s)
			rec.view.Store(v)
		}
		out = append(out, *v)
	}
	return out
}

// notable reports whether e is worth a line on the page: what goes wrong and what the
// pipeline does about it, not the attempts, admissions and waits of every call, nor each call
// an open circuit or a pause turns away (the page shows the circuit and the pause).
func notable(e *resilience.Event) bool {
	switch e.Type {
	case resilience.EventAttemptStarted, resilience.EventBulkheadAdmitted, resilience.EventBulkheadQueued,
		resilience.EventCooldownWaited, resilience.EventBreakerRejected, resilience.EventCooldownRejected:
		return false
	case resilience.EventAttemptFinished:
		return e.Err != nil || e.Status < 200 || e.Status >= 400
	}
	return true
}

// describe renders e for the page. Names and every text that came from elsewhere (a reason,
// an error) pass through the scrubber: URLs cut to scheme://host, credentials and the
// configured secrets masked, control characters replaced, the length bounded.
func describe(e *resilience.Event, s redact.Scrubber) *Event {
	v := &Event{Time: e.Time, Deployment: s.Text(e.Pipeline, maxName), Model: s.Text(e.Route, maxName),
		Type: e.Type.String()}
	var b []byte
	errText := func() string {
		if e.Err == nil {
			return ""
		}
		return s.Text(e.Err.Error(), maxDetail)
	}
	attempt := func() {
		if e.Attempt > 0 {
			b = append(b, "attempt "...)
			b = strconv.AppendInt(b, int64(e.Attempt), 10)
			if e.MaxAttempts > 0 {
				b = append(b, '/')
				b = strconv.AppendInt(b, int64(e.MaxAttempts), 10)
			}
			b = append(b, ": "...)
		}
	}
	why := func() {
		if t := errText(); t != "" {
			b = append(b, t...)
		} else if e.Status != 0 {
			b = append(b, "status "...)
			b = strconv.AppendInt(b, int64(e.Status), 10)
		} else if e.Reason != "" {
			b = append(b, s.Text(e.Reason, maxDetail)...)
		}
	}
	hint := func() {
		if e.ServerHint {
			b = append(b, " (server's hint)"...)
		}
	}
	switch e.Type {
	case resilience.EventAttemptFinished:
		attempt()
		why()
	case resilience.EventRetryScheduled:
		attempt()
		b = append(b, s.Text(e.Reason, maxDetail)...)
		b = append(b, "; retry in "...)
		b = append(b, formatWait(e.Delay)...)
		hint()
	case resilience.EventGaveUp:
		attempt()
		b = append(b, e.GaveUp.Description()...)
		if e.Delay > 0 {
			b = append(b, " (asked to wait "...)
			b = append(b, formatWait(e.Delay)...)
			b = append(b, ')')
		}
	case resilience.EventTimeout:
		b = append(b, string(e.Timeout)...)
		b = append(b, " limit of "...)
		b = append(b, formatWait(e.Delay)...)
		b = append(b, " ran out"...)
	case resilience.EventBreakerStateChanged:
		b = append(b, e.From.String()...)
		b = append(b, " → "...)
		b = append(b, e.To.String()...)
		if e.To == resilience.CircuitOpen && e.Delay > 0 {
			b = append(b, " for "...)
			b = append(b, formatWait(e.Delay)...)
		}
		if e.Reason != "" {
			b = append(b, " ("...)
			b = append(b, s.Text(e.Reason, maxDetail)...)
			b = append(b, ')')
		}
	case resilience.EventBulkheadRejected:
		b = append(b, "turned away: "...)
		b = append(b, string(e.Rejected)...)
		if e.Limit > 0 {
			b = append(b, " (limit "...)
			b = strconv.AppendInt(b, int64(e.Limit), 10)
			b = append(b, ')')
		}
	case resilience.EventCooldownStarted:
		b = append(b, "paused for "...)
		b = append(b, formatWait(e.Delay)...)
		hint()
		if e.Reason != "" {
			b = append(b, " ("...)
			b = append(b, s.Text(e.Reason, maxDetail)...)
			b = append(b, ')')
		}
	case resilience.EventSharedStateFailed:
		b = append(b, "the shared state does not answer: "...)
		why()
	case resilience.EventSharedStateRecovered:
		b = append(b, "the shared state answers again"...)
	case resilience.EventProbeFinished:
		if t := errText(); t != "" {
			b = append(b, "probe failed after "...)
			b = append(b, formatLatency(e.Duration)...)
			b = append(b, ": "...)
			b = append(b, t...)
		} else {
			b = append(b, "probe served in "...)
			b = append(b, formatLatency(e.Duration)...)
		}
	case resilience.EventConcurrencyLimitChanged:
		b = append(b, "limit "...)
		b = strconv.AppendInt(b, int64(e.PrevLimit), 10)
		b = append(b, " → "...)
		b = strconv.AppendInt(b, int64(e.Limit), 10)
		if e.Reason != "" {
			b = append(b, ": "...)
			b = append(b, s.Text(e.Reason, maxDetail)...)
		}
	default:
		why()
	}
	v.Detail = redact.Clip(string(b), 2*maxDetail)
	return v
}

// formatWait renders a wait or a limit to the millisecond ("1.5s", "250ms").
func formatWait(d time.Duration) string {
	return max(d, 0).Round(time.Millisecond).String()
}

// formatLatency renders a measured time: to the millisecond above a second, to a tenth of a
// millisecond below ("1.25s", "312.4ms").
func formatLatency(d time.Duration) string {
	if d >= time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Microsecond).String()
}
