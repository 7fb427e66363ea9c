package resilience

import (
	"sync"
	"time"
)

// deadlines fires the total timeouts of a pipeline's calls with a single timer instead of
// one per call. Arming and stopping a runtime timer per call is the most expensive part of a
// successful call (timer-heap locks, waking the poller); here a call costs a mutex and an
// append. Every call under the pipeline's own policy has the same timeout, so deadlines arrive
// in order and a
// FIFO queue is enough: the timer is set for the oldest live call, finished calls are dropped
// from the front as new ones arrive, and when the timer fires it cancels what has expired and
// re-arms for the next live call. A call under a per-call policy with another time limit
// (Call.Policy) has a timer of its own instead.
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
}

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
