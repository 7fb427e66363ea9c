package resilience

import "time"

// The bulkhead's queue: one first-come, first-served list of waiters per class, and the rules
// that decide which waiter a freed slot goes to (pick), who makes room in a full queue
// (shedFor) and how long a call turned away should stay away (estimate). Everything here runs
// under the bulkhead's mutex.

// waiter is a call waiting for a slot. granted and shed are decided under the bulkhead's mutex,
// then ready is closed.
type waiter struct {
	class      class
	ready      chan struct{}
	granted    bool
	shed       bool
	retry      time.Duration // the RetryAfter of a shed waiter
	since      int64         // when it joined the queue (emitter time, UnixNano)
	again      bool          // it held a slot and gave it back to retry (bulkhead.reacquire)
	prev, next *waiter
}

// waitList is one class's queue, oldest first.
type waitList struct {
	head, tail *waiter
	n          int
}

func (l *waitList) push(w *waiter) {
	w.prev = l.tail
	if l.tail != nil {
		l.tail.next = w
	} else {
		l.head = w
	}
	l.tail = w
	l.n++
}

// pushAgain puts w, a call that held a slot already (reacquire), ahead of every waiter that
// never did, behind those that did before it.
func (l *waitList) pushAgain(w *waiter) {
	w.again = true
	var after *waiter
	for x := l.head; x != nil && x.again; x = x.next {
		after = x
	}
	if after == nil {
		w.next = l.head
		l.head = w
	} else {
		w.prev, w.next = after, after.next
		after.next = w
	}
	if w.next != nil {
		w.next.prev = w
	} else {
		l.tail = w
	}
	l.n++
}

func (l *waitList) unlink(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		l.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		l.tail = w.prev
	}
	w.prev, w.next = nil, nil
	l.n--
}

// room reports whether a call of class cls may take a slot when n are taken, nb of them by
// batch calls: any free slot, but a batch call that is not owed a turn only while the batch
// calls hold fewer than the slots outside the reserve.
func (b *bulkhead) room(cls class, owed bool, n, nb int64) bool {
	if n >= b.limit.Load() {
		return false
	}
	return owed || !b.counts(cls) || nb < b.open.Load()
}

// dispatch hands free slots to the waiters pick chooses, until no slot is free or no waiter
// may take one. A batch waiter's slot is counted among the batch calls' first, so the count
// never passes what pick allowed.
func (b *bulkhead) dispatch() {
	for b.waiting.Load() > 0 {
		n, nb := b.inflight.Load(), b.batch.Load()
		w, owed := b.pick(n, nb)
		if w == nil {
			return
		}
		counted := b.counts(w.class)
		if counted && !b.batch.CompareAndSwap(nb, nb+1) {
			continue // a batch call took or freed a slot meanwhile: look again
		}
		if !b.inflight.CompareAndSwap(n, n+1) {
			if counted {
				b.batch.Add(-1)
			}
			continue // a slot freed or taken meanwhile: look again
		}
		b.grant(w, owed)
	}
}

// pick chooses the waiter that gets a slot when n are taken, nb of them by batch calls; nil
// when none may take one. A lower class that is owed a turn comes first (the one owed most);
// otherwise the highest class that may take a slot, its oldest waiter. A class earns credit
// each time a slot goes to a higher class while it waits (see grant), and a turn costs one
// credit, so a waiting lower class gets at least PriorityMinSharePercent of the slots handed
// over — also past the reserve, so a batch call is never kept out for ever by it.
func (b *bulkhead) pick(n, nb int64) (*waiter, bool) {
	if n >= b.limit.Load() {
		return nil, false
	}
	best := classUnknown
	for c := numClasses - 1; c > classInteractive; c-- {
		if b.queues[c].head != nil && b.owed[c] >= 1 && (best == classUnknown || b.owed[c] > b.owed[best]) {
			best = c
		}
	}
	if best != classUnknown {
		return b.queues[best].head, true
	}
	for c := classInteractive; c < numClasses; c++ {
		if b.queues[c].head != nil && b.room(c, false, n, nb) {
			return b.queues[c].head, false
		}
	}
	return nil, false
}

// grant gives w the slot dispatch took for it, and credits the lower classes that wait.
func (b *bulkhead) grant(w *waiter, owed bool) {
	if owed {
		b.owed[w.class]--
	}
	for c := w.class + 1; c < numClasses; c++ {
		if b.queues[c].head != nil {
			b.owed[c] += b.credit
		}
	}
	b.remove(w)
	w.granted = true
	close(w.ready)
}

// remove takes w out of its queue.
func (b *bulkhead) remove(w *waiter) {
	q := &b.queues[w.class]
	q.unlink(w)
	if q.head == nil {
		b.owed[w.class] = 0 // credit is for waiting, not to be saved up
	}
	if b.waiting.Add(-1) == 0 {
		b.freedAt = 0 // the gap until calls wait again says nothing of the pace
	}
}

// shedFor makes room in the full queue for a call of class cls: the newest waiter of the
// lowest class below cls is shed, with the estimate of when a slot would have been its own.
// While lower classes are owed a share (PriorityMinSharePercent), each class keeps one place
// in the queue, where its share is earned: a class's last waiter is not shed for a higher
// class, and a class with no waiter at all gets a place from the class with the most — else a
// flood of interactive calls would keep every batch call out of the queue. It reports false
// when no waiter is shed.
func (b *bulkhead) shedFor(cls class) bool {
	victim := classUnknown
	for c := numClasses - 1; c > cls; c-- {
		if n := b.queues[c].n; n > 1 || (n == 1 && b.credit == 0) {
			victim = c
			break
		}
	}
	if victim == classUnknown && b.credit > 0 && b.queues[cls].n == 0 {
		for c := classInteractive; c < numClasses; c++ {
			if b.queues[c].n > 1 && (victim == classUnknown || b.queues[c].n > b.queues[victim].n) {
				victim = c
			}
		}
	}
	if victim == classUnknown {
		return false
	}
	w := b.queues[victim].tail
	w.retry = b.estimate(victim) - time.Duration(b.every) // it is counted among the waiters ahead of itself
	b.remove(w)
	w.shed = true
	close(w.ready)
	return true
}

// noteFreed notes that a slot was freed while calls waited, for estimate.
func (b *bulkhead) noteFreed() {
	now := b.ev.now().UnixNano()
	if b.freedAt != 0 && now > b.freedAt {
		d := float64(now - b.freedAt)
		if b.every == 0 {
			b.every = d
		} else {
			b.every += 0.2 * (d - b.every)
		}
	}
	b.freedAt = now
}

// estimate is how long a call of class cls that joined the queue now would wait: the calls of
// its class or higher ahead of it, and itself, at the pace slots were freed while calls waited.
// 0 while the bulkhead has not seen that pace.
func (b *bulkhead) estimate(cls class) time.Duration {
	if b.every == 0 {
		return 0
	}
	ahead := 0
	for c := classInteractive; c <= cls; c++ {
		ahead += b.queues[c].n
	}
	return time.Duration(float64(ahead+1) * b.every)
}
