package statuspage

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/steadyllm/steady/internal/redact"
	"github.com/steadyllm/steady/resilience"
)

// The ring keeps the latest events, newest first, while writers on many goroutines add
// events and readers read at the same time (run with -race): a reader never sees more than
// the ring holds, nor an event out of order.
func TestRing_WritersAndReadersAtOnce(t *testing.T) {
	const size, writers, each = 16, 4, 500
	r := newRing(size)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var readErr error
	var rmu sync.Mutex
	wg.Add(1)
	go func() { // a reader, as a page being served
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			evs := r.latest(redact.New())
			last := map[string]time.Time{}
			for i := len(evs) - 1; i >= 0; i-- { // oldest first: one writer's times only grow
				e := evs[i]
				if prev, ok := last[e.Deployment]; ok && !e.Time.After(prev) {
					rmu.Lock()
					readErr = errors.New("events of one writer out of order: " + e.Detail)
					rmu.Unlock()
				}
				last[e.Deployment] = e.Time
			}
			if len(evs) > size {
				rmu.Lock()
				readErr = errors.New("more events than the ring holds")
				rmu.Unlock()
			}
		}
	}()
	var ww sync.WaitGroup
	for w := range writers {
		ww.Add(1)
		go func() {
			defer ww.Done()
			name := string(rune('a' + w))
			for i := range each {
				// Each writer's events carry growing times, so a reader can tell their order.
				r.observe(resilience.Event{Type: resilience.EventAttemptFinished, Pipeline: name, Status: 503,
					Attempt: i + 1, Time: time.Unix(0, int64(i+1))})
				r.observe(resilience.Event{Type: resilience.EventAttemptStarted, Pipeline: name}) // dropped
			}
		}()
	}
	ww.Wait()
	close(stop)
	wg.Wait()
	if readErr != nil {
		t.Fatal(readErr)
	}
	if got := r.seen(); got != writers*each {
		t.Fatalf("seen %d, want %d: an event every call makes was kept, or one was lost", got, writers*each)
	}
	evs := r.latest(redact.New())
	if len(evs) != size {
		t.Fatalf("%d events kept, want %d", len(evs), size)
	}
}

// An event a successful call makes costs the watcher no allocation; a notable one costs one.
func TestRing_ObserveAllocations(t *testing.T) {
	r := newRing(8)
	ok := resilience.Event{Type: resilience.EventAttemptFinished, Status: 200}
	if n := testing.AllocsPerRun(100, func() { r.observe(ok) }); n != 0 {
		t.Fatalf("%v allocations for a served attempt", n)
	}
	bad := resilience.Event{Type: resilience.EventAttemptFinished, Status: 503}
	if n := testing.AllocsPerRun(100, func() { r.observe(bad) }); n != 1 {
		t.Fatalf("%v allocations for a failed attempt, want 1", n)
	}
}

// The page watches exactly the events it may keep: every type it asks the pipelines for can
// be notable, and every other type is not, so no event the page wants is left unbuilt.
func TestRing_WatchesWhatItKeeps(t *testing.T) {
	asked := map[resilience.EventType]bool{}
	for _, typ := range watched {
		asked[typ] = true
	}
	for typ := resilience.EventType(1); typ.String() != "unknown"; typ++ {
		e := resilience.Event{Type: typ, Status: 503}
		if notable(&e) != asked[typ] {
			t.Errorf("%s: notable %v, watched %v", typ, notable(&e), asked[typ])
		}
	}
}
