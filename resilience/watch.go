package resilience

import (
	"slices"
	"sync"
	"sync/atomic"
)

// watchers are the observers added to a pipeline while it runs (Pipeline.Watch). The list is
// never changed once published: adding or removing one publishes a new list, under mu, so
// that the events of every call read it without a lock. mask is the union of the event types
// the watchers want, which a layer reads, with one atomic load, before it builds an event.
type watchers struct {
	mu   sync.Mutex
	mask atomic.Uint64
	list atomic.Pointer[watchList] // nil while nobody watches
}

// watchList is one published list of watchers.
type watchList struct {
	fns   []Observer
	masks []uint64 // the event types fns[i] wants
	ids   []uint64 // ids[i] identifies fns[i], for stop
}

// nextWatcher numbers the watchers of every pipeline, so a stop removes its own and no other.
var nextWatcher atomic.Uint64

// typeBit is t's bit in a mask of event types.
func typeBit(t EventType) uint64 { return 1 << (uint(t) & 63) }

// wants reports whether a watcher wants events of type t.
func (w *watchers) wants(t EventType) bool { return w.mask.Load()&typeBit(t) != 0 }

// Watch sends the events of the pipeline, and of its routes, to fn from now on, beside the
// observer of OnEvent, until stop is called: those of the given types, or every event when
// none is given. fn follows the rules of Observer (quick, safe for concurrent use, never
// keeping Event.Context). It is how a status page listens while it is mounted: an event no
// observer and no watcher wants is not even built, so a pipeline nobody watches pays one atomic
// load per event it could report, and a watcher that leaves out the events of every call
// (EventAttemptStarted, EventBulkheadAdmitted…) costs a call that goes well nothing more.
// Watch on a route watches its deployment, whose watchers hear every route. A nil fn watches
// nothing. stop may be called more than once, from any goroutine; events already being
// delivered when it returns may still reach fn.
func (p *Pipeline) Watch(fn Observer, types ...EventType) (stop func()) {
	if fn == nil {
		return func() {}
	}
	mask := ^uint64(0)
	if len(types) > 0 {
		mask = 0
		for _, t := range types {
			mask |= typeBit(t)
		}
	}
	w := p.ev.watch
	id := nextWatcher.Add(1)
	w.mu.Lock()
	next := &watchList{}
	if cur := w.list.Load(); cur != nil {
		next.fns, next.masks, next.ids = slices.Clone(cur.fns), slices.Clone(cur.masks), slices.Clone(cur.ids)
	}
	next.fns, next.masks, next.ids = append(next.fns, fn), append(next.masks, mask), append(next.ids, id)
	w.publish(next)
	w.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { w.remove(id) }) }
}

// publish makes l the list of watchers (nil: none), under mu. The list goes first and the mask
// after: a layer that sees the new mask finds the watcher it was raised for.
func (w *watchers) publish(l *watchList) {
	var mask uint64
	if l != nil {
		for _, m := range l.masks {
			mask |= m
		}
	}
	w.list.Store(l)
	w.mask.Store(mask)
}

// remove takes the watcher id off the list; the last one leaves none, so that events are no
// longer built for it.
func (w *watchers) remove(id uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	cur := w.list.Load()
	if cur == nil {
		return
	}
	i := slices.Index(cur.ids, id)
	if i < 0 {
		return
	}
	if len(cur.ids) == 1 {
		w.publish(nil)
		return
	}
	w.publish(&watchList{fns: slices.Delete(slices.Clone(cur.fns), i, i+1),
		masks: slices.Delete(slices.Clone(cur.masks), i, i+1), ids: slices.Delete(slices.Clone(cur.ids), i, i+1)})
}
