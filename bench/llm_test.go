package bench

import (
	"context"
	"runtime"
	"testing"
)

// openStreams is how many streams BenchmarkOpenStreams holds open at once.
const openStreams = 2000

// TestSubjectsReadTheWire checks that every client under test reads the whole answer, the
// whole stream and the head of an open stream: a benchmark of a client that misread the
// workload would time nothing.
func TestSubjectsReadTheWire(t *testing.T) {
	ctx := context.Background()
	for _, w := range wires {
		for _, s := range w.subjects(jsonWire(w.answer)) {
			got, err := s.chat(ctx)
			if err != nil || got != answer {
				t.Errorf("%s/%s chat: %q, %v", w.name, s.name, got, err)
			}
		}
		for _, s := range w.subjects(eventWire(w.events)) {
			deltas, text, err := s.stream(ctx, nil)
			if err != nil || deltas != w.chunks || text != len(answer) {
				t.Errorf("%s/%s stream: %d deltas, %d bytes, %v; want %d, %d", w.name, s.name, deltas, text, err, w.chunks, len(answer))
			}
		}
		for _, s := range w.subjects(heldWire{w.head}) {
			closeFn, err := s.open(ctx)
			if err != nil {
				t.Errorf("%s/%s open: %v", w.name, s.name, err)
				continue
			}
			if err := closeFn(); err != nil {
				t.Errorf("%s/%s close: %v", w.name, s.name, err)
			}
		}
	}
}

// BenchmarkChat is one chat call of the workload, each client over the same in-memory
// transport.
func BenchmarkChat(b *testing.B) {
	for _, w := range wires {
		for _, s := range w.subjects(jsonWire(w.answer)) {
			b.Run(w.name+"/"+s.name, func(b *testing.B) {
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					if got, err := s.chat(ctx); err != nil || len(got) != len(answer) {
						b.Fatal(got, err)
					}
				}
			})
		}
	}
}

// BenchmarkStream is one streamed call of the workload (the wire's chunks content deltas:
// 200, 64 on the Responses wire), read to the end. Besides the usual figures it reports
// allocs/chunk, the allocations of reading one content delta, measured over the deltas after
// the first, and ns/chunk, the whole stream's time divided by its content deltas.
func BenchmarkStream(b *testing.B) {
	for _, w := range wires {
		for _, s := range w.subjects(eventWire(w.events)) {
			b.Run(w.name+"/"+s.name, func(b *testing.B) {
				ctx := context.Background()
				perChunk := allocsPerChunk(b, s, w.chunks)
				b.ReportAllocs()
				for b.Loop() {
					if deltas, _, err := s.stream(ctx, nil); err != nil || deltas != w.chunks {
						b.Fatal(deltas, err)
					}
				}
				b.ReportMetric(perChunk, "allocs/chunk")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(w.chunks), "ns/chunk")
			})
		}
	}
}

// allocsPerChunk measures, over a few streams, the allocations made from the first content
// delta to the end of the stream, per delta after the first. The closing events of the
// stream and the Close are included, so it is a slight over-estimate for every client alike.
func allocsPerChunk(b *testing.B, s subject, chunks int) float64 {
	const streams = 20
	var total uint64
	var before, after runtime.MemStats
	for range streams {
		_, _, err := s.stream(context.Background(), func() { runtime.ReadMemStats(&before) })
		runtime.ReadMemStats(&after)
		if err != nil {
			b.Fatal(err)
		}
		total += after.Mallocs - before.Mallocs
	}
	return float64(total) / streams / float64(chunks-1)
}

// BenchmarkOpenStreams holds openStreams streams open at once, each in the middle of its
// answer (its first content delta read, the server silent), and reports the heap they hold:
// B/stream, after a garbage collection, everything the client keeps for one open stream
// (buffers, decoder state, the pipeline's per-call state, the response and request objects).
// ns/op is the time to open all of them and is not meant for comparison.
func BenchmarkOpenStreams(b *testing.B) {
	for _, w := range wires {
		for _, s := range w.subjects(heldWire{w.head}) {
			b.Run(w.name+"/"+s.name, func(b *testing.B) {
				ctx := context.Background()
				closers := make([]func() error, openStreams)
				var held float64
				for b.Loop() {
					before := heapInUse()
					for i := range closers {
						c, err := s.open(ctx)
						if err != nil {
							b.Fatal(err)
						}
						closers[i] = c
					}
					held += float64(heapInUse()-before) / openStreams
					for i, c := range closers {
						_ = c()
						closers[i] = nil
					}
				}
				b.ReportMetric(held/float64(b.N), "B/stream")
			})
		}
	}
}

// heapInUse returns the bytes of live heap objects after a full collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
