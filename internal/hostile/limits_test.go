package hostile_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"math"
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steadyllm/steady/providers"
)

const gib = 1 << 30

// flood writes head, then fill over and over until total bytes went out or the client left.
// Nothing is allocated per write: a gigabyte costs the server nothing but time.
func flood(w http.ResponseWriter, head string, fill []byte, total int64) {
	if _, err := w.Write([]byte(head)); err != nil {
		return
	}
	chunk := bytes.Repeat(fill, max(1, (32<<10)/len(fill)))
	for sent := int64(len(head)); sent < total; sent += int64(len(chunk)) {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// allocated runs f and returns the most heap the process held meanwhile above what it held
// before, sampled every few milliseconds: what the client kept, bounded from above. A sample
// past half of bound, the most the caller allows, is taken again from the memory profile
// (heldByProfile): garbage — a stream of empty chunks makes a lot of it, held by nothing —
// piles up faster than the collector runs on a busy machine or a single core, and what the
// collector marks live includes whatever was allocated while it ran (GOMAXPROCS=1 sampled
// 33 MiB of heap, and 26 MiB "live" after a forced collection, where the profile found 4).
func allocated(bound uint64, f func()) uint64 {
	// A low GC target keeps garbage from piling up between collections in the first place.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	profiled := heldByProfile()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, ms.HeapAlloc
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			held := m.HeapAlloc
			if held > base+bound/2 {
				held = base + max(heldByProfile(), profiled) - profiled
			}
			peak = max(peak, held)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(stop)
	<-done
	return peak - base
}

// heldByProfile returns the heap the memory profile finds in use — allocations a collection
// did not free — scaled up from its samples as pprof scales them. The profile leaves out what
// was allocated after the collection it reflects began, so garbage made while the collector
// ran cannot count; what a client retains stays in it, collection after collection.
func heldByProfile() uint64 {
	runtime.GC()
	runtime.GC() // the profile is published a cycle late
	n, _ := runtime.MemProfile(nil, true)
	var recs []runtime.MemProfileRecord
	for {
		recs = make([]runtime.MemProfileRecord, n+64)
		var ok bool
		if n, ok = runtime.MemProfile(recs, true); ok {
			recs = recs[:n]
			break
		}
	}
	rate := float64(runtime.MemProfileRate)
	var held float64
	for _, r := range recs {
		if r.InUseBytes() <= 0 || r.AllocObjects == 0 {
			continue
		}
		size := float64(r.AllocBytes) / float64(r.AllocObjects)
		held += float64(r.InUseBytes()) / (1 - math.Exp(-size/rate))
	}
	return uint64(held)
}

func isLimit(err error, name string) bool {
	var le *providers.LimitError
	return errors.As(err, &le) && le.Limit == name
}

// hostileBody is one way a server can try to make the client hold too much.
type hostileBody struct {
	name  string
	ops   []string // the operations it applies to
	limit string   // the limit that must stop it
	serve func(w http.ResponseWriter, r *http.Request, k kind)
}

// bomb is a gzip body of 64 MiB of JSON white space, a few hundred kilobytes on the wire.
var bomb = sync.OnceValue(func() []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	spaces := bytes.Repeat([]byte(" "), 1<<20)
	for i := 0; i < 64; i++ {
		_, _ = zw.Write(spaces)
	}
	_ = zw.Close()
	return b.Bytes()
})

func sse(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
}

var hostileBodies = []hostileBody{
	{"a gigabyte of JSON answer", []string{"chat", "embed"}, "MaxResponseBytes", func(w http.ResponseWriter, _ *http.Request, _ kind) {
		w.Header().Set("Content-Type", "application/json")
		flood(w, `{"id":"x","model":"m","type":"message","content":[{"type":"text","text":"`, []byte("aaaaaaaa"), gib)
	}},
	{"a gigabyte of white space", []string{"chat", "embed"}, "MaxResponseBytes", func(w http.ResponseWriter, _ *http.Request, _ kind) {
		w.Header().Set("Content-Type", "application/json")
		flood(w, `{"choices":[`, []byte("        "), gib)
	}},
	{"a gzip bomb", []string{"chat", "embed"}, "MaxResponseBytes", func(w http.ResponseWriter, _ *http.Request, _ kind) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(bomb())
	}},
	{"a single endless event-stream line", []string{"stream"}, "MaxEventBytes", func(w http.ResponseWriter, _ *http.Request, _ kind) {
		sse(w)
		flood(w, "data: ", []byte("xxxxxxxx"), gib)
	}},
	{"an endless line of no field", []string{"stream"}, "MaxEventBytes", func(w http.ResponseWriter, _ *http.Request, _ kind) {
		sse(w)
		flood(w, "", []byte("zzzzzzzz"), gib)
	}},
	{"an endless comment flood", []string{"stream"}, "MaxEventBytes", func(w http.ResponseWriter, _ *http.Request, _ kind) {
		sse(w)
		flood(w, "", []byte(": keep-alive\n"), gib)
	}},
	{"an endless flood of other fields", []string{"stream"}, "MaxEventBytes", func(w http.ResponseWriter, _ *http.Request, _ kind) {
		sse(w)
		flood(w, "", []byte("id: 1\nretry: 5\n"), gib)
	}},
	{"an endless event", []string{"stream"}, "MaxEventBytes", func(w http.ResponseWriter, _ *http.Request, k kind) {
		sse(w)
		flood(w, "", []byte("data: {\"x\":1}\n"), gib) // data lines that never end the event
	}},
	{"a gzip bomb as a stream", []string{"stream"}, "MaxEventBytes", func(w http.ResponseWriter, _ *http.Request, _ kind) {
		w.Header().Set("Content-Encoding", "gzip")
		sse(w)
		_, _ = w.Write(bomb())
	}},
}

// Rule 2: memory is bounded by configuration, never by the server. Each hostile body ends in
// a typed error naming the limit it hit, the client allocates a small multiple of that
// limit, and the call ends although the server would go on for a gigabyte.
func TestLimits_HostileBodiesAreCutAtTheConfiguredLimit(t *testing.T) {
	lim := providers.Limits{MaxResponseBytes: 1 << 20, MaxEventBytes: 256 << 10, MaxErrorBodyBytes: 16 << 10}
	bomb() // made before any call is timed
	for _, hb := range hostileBodies {
		for _, k := range kinds {
			srv := server(t, func(w http.ResponseWriter, r *http.Request) { hb.serve(w, r, k) })
			o := policy()
			if hb.name == "an endless event" {
				o.TimeoutSeconds = 2 // ends the wait for content that never comes (see below)
			}
			c := newClient(t, k, srv.URL, o, lim)
			for _, op := range hb.ops {
				if op == "embed" && k.isAnthropic() {
					continue
				}
				var err error
				used := allocated(16<<20, func() {
					within(t, time.Minute, hb.name, func() { err = run(context.Background(), c, op) })
				})
				e := asError(t, err)
				if k.goOpenAIStreams() && hb.name == "an endless flood of other fields" && strings.Contains(e.Message, "too many lines without data") {
					// go-openai's own bound on lines without data (10000 of them, each within
					// MaxEventBytes) can strike first: bounded as well.
				} else if k.goOpenAIStreams() && hb.name == "an endless event" {
					// To go-openai every data line is a chunk of its own: an endless run of
					// empty chunks holds no memory, and ends when no content came in time.
					if e.Kind != providers.KindTimeout {
						t.Fatalf("%s, %s: %v, want a timeout waiting for content", hb.name, k.name, err)
					}
				} else if !isLimit(err, hb.limit) || e.Kind != providers.KindUnavailable {
					t.Fatalf("%s, %s %s: %v (%s), want %s exceeded", hb.name, k.name, op, err, e.Kind, hb.limit)
				}
				t.Logf("%s, %s %s: peak heap +%d KiB", hb.name, k.name, op, used>>10)
				if used > 16<<20 {
					t.Fatalf("%s, %s %s: %d MiB held for limits of at most 1 MiB", hb.name, k.name, op, used>>20)
				}
			}
		}
	}
}

// With the default limits, the same bodies are cut at the documented defaults.
func TestLimits_DefaultsBoundAGigabyte(t *testing.T) {
	for _, k := range kinds {
		srv := server(t, func(w http.ResponseWriter, r *http.Request) { hostileBodies[0].serve(w, r, k) })
		// Reading 32 MiB under the race detector, with another test run competing for the
		// CPU, can take longer than the usual 10 s limit: the test is about bytes, not time.
		o := policy()
		o.TimeoutSeconds, o.StreamIdleTimeoutSeconds = 300, 300
		c := newClient(t, k, srv.URL, o, providers.Limits{})
		var err error
		used := allocated(6*providers.DefaultMaxResponseBytes, func() { err = run(context.Background(), c, "chat") })
		if !isLimit(err, "MaxResponseBytes") {
			t.Fatalf("%s: %v", k.name, err)
		}
		var le *providers.LimitError
		errors.As(err, &le)
		// A JSON decoder's buffer doubles as it grows: a few times the limit in all.
		if le.Max != providers.DefaultMaxResponseBytes || used > 6*providers.DefaultMaxResponseBytes {
			t.Fatalf("%s: limit %d, %d MiB allocated", k.name, le.Max, used>>20)
		}
	}
}

// An error body of a gigabyte is read up to MaxErrorBodyBytes; the status still classifies
// the error, and a retried 503's gigabyte is discarded without being held.
func TestLimits_ErrorBodiesAndDiscardedRetries(t *testing.T) {
	lim := providers.Limits{MaxErrorBodyBytes: 16 << 10}
	for _, k := range kinds {
		for _, code := range []int{400, 503} {
			srv := server(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				w.WriteHeader(code)
				flood(w, "", []byte("error! "), gib)
			})
			o := policy()
			o.RetryCount = 2
			c := newClient(t, k, srv.URL, o, lim)
			var err error
			used := allocated(16<<20, func() { err = run(context.Background(), c, "chat") })
			e := asError(t, err)
			want := map[int]providers.ErrorKind{400: providers.KindBadRequest, 503: providers.KindUnavailable}[code]
			if e.Kind != want || e.StatusCode != code || used > 16<<20 {
				t.Fatalf("%s %d: %v (%s), %d MiB allocated", k.name, code, err, e.Kind, used>>20)
			}
		}
	}
}
