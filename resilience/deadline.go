package resilience

import (
	"sync"
	"time"
)

// deadlines fires the total timeouts of a pipeline's calls with a single timer instead of
// one per call. Arming and stopping a runtime timer per call is the most expensive part of a
// successful call (timer-heap locks, waking the poller); here a call costs a mutex and an
// append. Every call under the pipeline's own policy has the same timeout, so deadlines arrive
// in order and a FIFO queue is enough: the timer is set for the oldest live call, finished
// calls are dropped from the front as new ones arrive, and when the timer fires it cancels what
// has expired and re-arms for the next live call. A call under a per-call policy with another
// time limit (Call.Policy) has a timer of its own instead.
//
// A finished call behind a live one is swept out too, once the queue has grown to twice what
// it held live at the last sweep: a queued call holds its context, whose caller may keep a
// whole answer in it (a stream and its text), and a slow call at the front must not keep every
// call that finished after it alive until its own deadline.
type deadlines struct {
	clock Clock

	mu    sync.Mutex
	queue []*call
	head  int
	timer Timer
	armed bool // the timer is set, for the oldest live call
	// first says which limit the queue keeps (see limit, off, expire): the first-token limit,
	// or the total timeout. Each has a queue.
	first bool
	// sweepAt is the length past which the queue is swept of its finished calls (see add).
	sweepAt int
}

// minSweep is the least length at which the queue of deadlines is swept: below it, finished
// calls wait to be dropped from the front.
const minSweep = 64

// limit is how long a call has: the same for every call queued.
func (d *deadlines) limit(c *call) time.Duration {
	if d.first {
		return c.pol.firstToken
	}
	return c.pol.total
}

// off reports whether the call no longer needs its limit.
func (d *deadlines) off(c *call) bool {
	if d.first {
		return c.firstDone.Load() || c.done.Load()
	}
	return c.totalOff.Load()
}

// expire is what happens when a call's limit runs out.
func (d *deadlines) expire(c *call) {
	if d.first {
		c.expireFirst()
	} else {
		c.expireTotal()
	}
}

// add enters a call of a pipeline whose start is set.
func (d *deadlines) add(c *call) {
	d.mu.Lock()
	d.dropFinished()
	if n := len(d.queue) - d.head; n >= max(d.sweepAt, minSweep) {
		d.sweep()
	}
	d.queue = append(d.queue, c)
	if !d.armed {
		d.arm(c.start.Add(d.limit(c)))
	}
	d.mu.Unlock()
}

// dropFinished removes finished calls from the front and compacts the queue now and then.
func (d *deadlines) dropFinished() {
	for d.head < len(d.queue) && d.off(d.queue[d.head]) {
		d.queue[d.head] = nil
		d.head++
	}
	switch {
	case d.head == len(d.queue):
		d.queue, d.head = d.queue[:0], 0
	case d.head > 64 && d.head > len(d.queue)/2:
		n := copy(d.queue, d.queue[d.head:])
		clear(d.queue[n:])
		d.queue, d.head = d.queue[:n], 0
	}
}

// sweep removes every finished call from the queue, keeping the live ones in order, and sets
// the length of the next sweep to twice what is left: each call is swept at most a few times,
// however long the oldest live call lasts.
func (d *deadlines) sweep() {
	live := d.queue[:0]
	for _, c := range d.queue[d.head:] {
		if !d.off(c) {
			live = append(live, c)
		}
	}
	clear(d.queue[len(live):])
	d.queue, d.head = live, 0
	d.sweepAt = 2 * len(live)
}

func (d *deadlines) arm(at time.Time) {
	wait := at.Sub(d.clock.Now())
	if d.timer == nil {
		d.timer = d.clock.AfterFunc(wait, d.fire)
	} else {
		d.timer.Reset(wait)
	}
	d.armed = true
}

// fire cancels every live call whose deadline has passed and re-arms for the next one.
func (d *deadlines) fire() {
	now := d.clock.Now()
	var expired []*call
	d.mu.Lock()
	for d.head < len(d.queue) {
		c := d.queue[d.head]
		if !d.off(c) {
			if c.start.Add(d.limit(c)).After(now) {
				break
			}
			expired = append(expired, c)
		}
		d.queue[d.head] = nil
		d.head++
	}
	d.armed = false
	d.dropFinished()
	if d.head < len(d.queue) {
		d.arm(d.queue[d.head].start.Add(d.limit(d.queue[d.head])))
	}
	d.mu.Unlock()
	for _, c := range expired {
		d.expire(c)
	}
}

// pending returns the number of calls still queued, finished or not (for tests).
func (d *deadlines) pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.queue) - d.head
}
