package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/resilience"
)

// The output docs/failures.md shows: through the relay, "continue" gives the caller the whole
// answer once, "off" the part delivered without [DONE], "restart" the part and then the whole
// answer again — what a caller of a relay that used it would read.
func TestRelay_TheCallerReadsOneAnswer(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	want := `continue "one two three four five six seven eight nine ten", complete: true
off      "one two three four five", complete: false
restart  "one two three four fiveone two three four five six seven eight nine ten", complete: true
`
	if got := out.String(); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

// BenchmarkRelay_TimeToFirstToken reads answers through the relay — from a primary that serves
// them whole, and from one whose stream is cut after five words; every word 1 ms after the one
// before, as a model's tokens come — with rescue "off", "continue" and "buffer", and reports
// the mean time from the request to the caller's first text (ns-to-first-token) beside the
// time to the end of the answer (ns/op).
func BenchmarkRelay_TimeToFirstToken(b *testing.B) {
	for _, cut := range []bool{false, true} {
		for _, mode := range []string{resilience.RescueOff, resilience.RescueContinue, resilience.RescueBuffer} {
			step := mocks.Reply(answer)
			step.ChunkDelay = time.Millisecond
			name := "whole/" + mode
			if cut {
				name = "cut/" + mode
				step.Cut, step.CutAfter, step.CountContent = mocks.CutAbort, 5, true
			}
			b.Run(name, func(b *testing.B) {
				primary := mocks.NewServer(mocks.WithScript(step.Always()))
				defer primary.Close()
				fallback := mocks.Reply(answer)
				fallback.ChunkDelay = time.Millisecond
				claude := mocks.NewServer(mocks.WithScript(fallback.Always()))
				defer claude.Close()
				c, err := newClient(primary, claude, resilience.DefaultOptions())
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				srv := httptest.NewServer(relay(c, mode))
				defer srv.Close()
				var first time.Duration
				b.ResetTimer()
				for i := range b.N {
					if i%4 == 0 {
						// Every answer meets the cut: keep the primary's circuit closed, as for
						// a provider that cuts one stream in many.
						b.StopTimer()
						c.Circuits()["openai"].Reset()
						b.StartTimer()
					}
					start := time.Now()
					got, err := askWatching(context.Background(), srv.URL, "Count to ten.", func() { first += time.Since(start) })
					if err != nil {
						b.Fatal(err)
					}
					if want := !cut || mode != resilience.RescueOff; got.done != want || want && got.text != answer {
						b.Fatalf("%+v", got)
					}
				}
				b.ReportMetric(float64(first.Nanoseconds())/float64(b.N), "ns-to-first-token")
			})
		}
	}
}
