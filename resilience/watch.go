package resilience

import (
	"slices"
	"sync"
	"sync/atomic"
)

// watchers are the observers added to a pipeline while it runs (Pipeline.Watch). The list is
// never changed once published: adding or removing one publishes a new list, under mu, so
// that the events of every call read it with one atomic load and take no lock.
type watchers struct {
	mu   sync.Mutex
	list atomic.Pointer[watchList] // nil while nobody watches
}

// watchList is one published list of watchers.
type watchList struct {
	fns []Observer
	ids []uint64 // ids[i] identifies fns[i], for stop
}

// next numbers the watchers of every pipeline, so a stop removes its own and no other.
var nextWatcher atomic.Uint64

// Watch sends every event of the pipeline, and of its routes, to fn from now on, beside the
// observer of OnEvent, until stop is called; fn follows the rules of Observer (quick, safe for
// concurrent use, never keeping Event.Context). It is how a status page listens while it is
// mounted: a pipeline nobody watches builds no event for it, and pays one atomic load per
// event it could report. Watch on a route watches its deployment, whose watchers hear every
// route. A nil fn watches nothing. stop may be called more than once, from any goroutine;
// events already being delivered when it returns may still reach fn.
func (p *Pipeline) Watch(fn Observer) (stop func()) {
	if fn == nil {
		return func() {}
	}
	w := p.ev.watch
	id := nextWatcher.Add(1)
	w.mu.Lock()
	next := &watchList{}
	if cur := w.list.Load(); cur != nil {
		next.fns, next.ids = slices.Clone(cur.fns), slices.Clone(cur.ids)
	}
	next.fns, next.ids = append(next.fns, fn), append(next.ids, id)
	w.list.Store(next)
	w.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { w.remove(id) }) }
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
		w.list.Store(nil)
		return
	}
	next := &watchList{fns: slices.Delete(slices.Clone(cur.fns), i, i+1), ids: slices.Delete(slices.Clone(cur.ids), i, i+1)}
	w.list.Store(next)
}
