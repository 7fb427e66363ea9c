package mocks_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/mocks"
)

// blockedRead starts reading r's next event and returns where its result will arrive: a test
// cancels the request and then checks that the read ended in an error, not with an event (the
// server sent nothing more while it was meant to be silent).
func blockedRead(r *sseReader) <-chan error {
	got := make(chan error, 1)
	go func() {
		e, err := r.next()
		if err == nil {
			err = errors.New("an event arrived during the silence: " + e.name + " " + e.data)
			got <- &unexpected{err}
			return
		}
		got <- err
	}()
	return got
}

type unexpected struct{ error }

// leaveSilence cancels the request whose next event is being read, and fails the test if that
// read got an event rather than an error.
func leaveSilence(t *testing.T, cancel context.CancelFunc, read <-chan error) {
	t.Helper()
	cancel()
	var u *unexpected
	if err := <-read; errors.As(err, &u) {
		t.Error(err)
	}
}

func TestSlowFirstToken_HeadersAndPreambleArriveThenTheFirstTokenIsLate(t *testing.T) {
	for _, w := range wires() {
		t.Run(w.name, func(t *testing.T) {
			s := newServer(t, mocks.WithScript(mocks.SlowFirstToken(time.Hour)))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			res, r := openStream(t, ctx, s, w, w.body) // the 200 and its headers are here at once
			defer res.Body.Close()
			var evs []event
			for range w.preamble {
				e, err := r.next()
				if err != nil {
					t.Fatalf("preamble: %v", err)
				}
				evs = append(evs, e)
			}
			if got := w.read(evs); got.text != "" || got.finish != "" {
				t.Fatalf("the preamble carried content: %+v", got)
			}
			leaveSilence(t, cancel, blockedRead(r))
			waitIdle(t, s)
			if last, _ := s.Journal().Last(); !strings.Contains(last.Step, "first-token-delay=1h0m0s") {
				t.Errorf("journal step %q", last.Step)
			}
		})
	}
}

func TestSlowFirstToken_TheWholeAnswerFollowsOnceTheDelayEnds(t *testing.T) {
	for _, w := range wires() {
		t.Run(w.name, func(t *testing.T) {
			s := newServer(t, mocks.WithScript(mocks.SlowFirstToken(10*time.Millisecond)))
			got, _, err := readStream(t, s, w, w.body)
			if err != nil || got.text != "one two three four" || !got.terminal || got.finish == "" {
				t.Errorf("%+v, err %v", got, err)
			}
		})
	}
}

func TestStallAfter_SendsNContentEventsThenGoesSilentUntilTheClientLeaves(t *testing.T) {
	for _, w := range wires() {
		t.Run(w.name, func(t *testing.T) {
			s := newServer(t, mocks.WithScript(mocks.StallAfter(2, 0)))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			res, r := openStream(t, ctx, s, w, w.body)
			defer res.Body.Close()
			var evs []event
			for range w.preamble + 2 {
				e, err := r.next()
				if err != nil {
					t.Fatalf("before the stall: %v", err)
				}
				evs = append(evs, e)
			}
			if got := w.read(evs); got.text != "one two" {
				t.Fatalf("text before the stall %q", got.text)
			}
			leaveSilence(t, cancel, blockedRead(r))
			waitIdle(t, s)
		})
	}
}

func TestStallAfter_GoesOnToTheEndWhenTheStallEnds(t *testing.T) {
	for _, w := range wires() {
		t.Run(w.name, func(t *testing.T) {
			s := newServer(t, mocks.WithScript(mocks.StallAfter(2, 10*time.Millisecond), mocks.StallAfter(9, 0)))
			got, _, err := readStream(t, s, w, w.body)
			if err != nil || got.text != "one two three four" || !got.terminal {
				t.Errorf("%+v, err %v", got, err)
			}
			// More content events asked for than the reply has: no stall.
			got, _, err = readStream(t, s, w, w.body)
			if err != nil || got.text != "one two three four" || !got.terminal {
				t.Errorf("stall past the answer: %+v, err %v", got, err)
			}
		})
	}
}

func TestStallAfter_EndsWhenTheServerCloses(t *testing.T) {
	s := mocks.NewServer(mocks.WithScript(mocks.StallAfter(1, 0)))
	w := wires()[0]
	res, r := openStream(t, context.Background(), s, w, w.body)
	defer res.Body.Close()
	for range w.preamble + 1 {
		if _, err := r.next(); err != nil {
			t.Fatal(err)
		}
	}
	s.Close() // must not hang
	if _, err := io.ReadAll(res.Body); err == nil {
		t.Error("a stalled stream ended cleanly after Close")
	}
}

func TestMalformedAt_BreaksTheNthContentEventAndTheStreamGoesOn(t *testing.T) {
	for _, w := range wires() {
		t.Run(w.name, func(t *testing.T) {
			s := newServer(t, mocks.WithScript(mocks.MalformedAt(2)))
			got, evs, err := readStream(t, s, w, w.body)
			if err != nil {
				t.Fatal(err)
			}
			// The second word is lost in the broken event; everything after it arrives,
			// finish reason and terminal event included.
			if want := []int{w.preamble + 1}; !reflect.DeepEqual(got.bad, want) {
				t.Errorf("bad events %v, want %v: %v", got.bad, want, evs)
			}
			if got.text != "one three four" || got.finish == "" || !got.terminal {
				t.Errorf("%+v", got)
			}
			if w.anthropic() && evs[w.preamble+1].name != "content_block_delta" {
				t.Errorf("the broken event is %q", evs[w.preamble+1].name)
			}
		})
	}
}

func TestOmitTerminal_CompleteStreamWithFinishReasonAndUsageButNoTerminalEvent(t *testing.T) {
	for _, w := range wires() {
		t.Run(w.name, func(t *testing.T) {
			s := newServer(t, mocks.WithScript(mocks.OmitTerminal()))
			got, evs, err := readStream(t, s, w, w.body)
			if err != nil { // the body ends cleanly
				t.Fatal(err)
			}
			wantFinish, wantLast := "stop", "usage"
			switch {
			case w.anthropic():
				wantFinish, wantLast = "end_turn", "message_delta"
			case w.responses(): // its terminal event is the one with the finish and the usage
				wantFinish, wantLast = "completed", "response.completed"
			}
			if got.text != "one two three four" || got.finish != wantFinish || !got.usage || got.terminal != w.responses() {
				t.Errorf("%+v", got)
			}
			if last := got.kinds[len(got.kinds)-1]; last != wantLast {
				t.Errorf("last event %q, want %q: %v", last, wantLast, evs)
			}
		})
	}
}

func TestCutCountingContent_CutsAfterNWordsWhateverThePreamble(t *testing.T) {
	for _, w := range wires() {
		t.Run(w.name, func(t *testing.T) {
			s := newServer(t, mocks.WithScript(
				mocks.CutStream(2).CountingContent(),
				mocks.CutStream(4).CountingContent(),      // the whole answer, no finish reason
				mocks.TruncateStream(0).CountingContent(), // the preamble alone, a clean end
			))
			got, evs, err := readStream(t, s, w, w.body)
			if !errors.Is(err, io.ErrUnexpectedEOF) || got.text != "one two" || len(evs) != w.preamble+2 {
				t.Errorf("cut after 2: %+v, %d events, err %v", got, len(evs), err)
			}
			got, evs, err = readStream(t, s, w, w.body)
			if !errors.Is(err, io.ErrUnexpectedEOF) || got.text != "one two three four" || got.finish != "" || len(evs) != w.preamble+4 {
				t.Errorf("cut after 4: %+v, %d events, err %v", got, len(evs), err)
			}
			got, evs, err = readStream(t, s, w, w.body)
			if err != nil || len(evs) != w.preamble || got.text != "" || got.terminal {
				t.Errorf("truncated after 0: %+v, %d events, err %v", got, len(evs), err)
			}
		})
	}
}

func TestStreamErrorCountingContent_ComesAfterNWords(t *testing.T) {
	for _, w := range wires() {
		t.Run(w.name, func(t *testing.T) {
			st := mocks.StreamError(3, "overloaded_error").CountingContent()
			s := newServer(t, mocks.WithScript(st))
			got, evs, err := readStream(t, s, w, w.body)
			last := evs[len(evs)-1]
			var v map[string]any
			errType := []any{"error", "type"}
			if w.responses() {
				errType = []any{"code"} // {"type":"error","code":…,"message":…}
			}
			if err != nil || got.text != "one two three" || len(evs) != w.preamble+4 ||
				json.Unmarshal([]byte(last.data), &v) != nil || path(v, errType...) != "overloaded_error" {
				t.Errorf("%+v, %v, err %v", got, evs, err)
			}
		})
	}
}

func TestReply_OfKWordsIsExactlyKContentEvents(t *testing.T) {
	for _, w := range wires() {
		t.Run(w.name, func(t *testing.T) {
			s := newServer(t, mocks.WithScript(mocks.Reply("alpha beta gamma delta epsilon")))
			got, _, err := readStream(t, s, w, w.body)
			n := 0
			for _, k := range got.kinds {
				if k == "content" || k == "content_block_delta" || k == "response.output_text.delta" {
					n++
				}
			}
			if err != nil || n != 5 || got.text != "alpha beta gamma delta epsilon" {
				t.Errorf("%d content events, %+v, err %v", n, got, err)
			}
		})
	}
}

// The silent providers: Delay and Stall send no status and no header while they last, unlike
// SlowFirstToken and StallAfter, whose 200 arrives at once.
func TestSilentProvider_DelayAndStallSendNoHeadersWhileTheyLast(t *testing.T) {
	for _, st := range []mocks.Step{mocks.Latency(time.Hour), mocks.Stall()} {
		for _, w := range wires() {
			t.Run(st.String()+"/"+w.name, func(t *testing.T) {
				s := newServer(t, mocks.WithScript(st))
				ctx, cancel := context.WithCancel(context.Background())
				errc := make(chan error, 1)
				go func() {
					res, err := do(t, ctx, s, "POST", w.path, w.header, w.body)
					if err == nil {
						res.Body.Close()
						err = errors.New("a response arrived: " + res.Status)
						errc <- &unexpected{err}
						return
					}
					errc <- err
				}()
				if err := s.Journal().Wait(context.Background(), 1); err != nil {
					t.Fatal(err)
				}
				leaveSilence(t, cancel, errc)
				waitIdle(t, s)
			})
		}
	}
}

func TestMalformedAt_CountsThinkingDeltasAsContent(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.MalformedAt(1)))
	w := wires()[1]
	body := `{"model":"claude-sonnet-4-5","max_tokens":4096,"stream":true,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"one two"}]}`
	got, evs, err := readStream(t, s, w, body)
	// message_start and the thinking block's start open the stream; the first thinking delta
	// is the first content event.
	if err != nil || !reflect.DeepEqual(got.bad, []int{2}) || evs[2].name != "content_block_delta" || got.text != "one two" {
		t.Errorf("%+v, err %v", got, err)
	}
}

// KeepAlive and Trickle fill a stream's wait for its first token with SSE comments — whole, or
// a byte at a time — and the answer that follows is whole: a trickled line left half sent is
// ended before the first event, which no comment swallows.
func TestKeepAliveAndTrickle_FillTheWaitAndTheAnswerFollowsWhole(t *testing.T) {
	for _, w := range wires() {
		for name, st := range map[string]mocks.Step{
			"keep-alive": mocks.SlowFirstToken(60 * time.Millisecond).WithKeepAlive(10 * time.Millisecond),
			"trickle":    mocks.SlowFirstToken(60 * time.Millisecond).WithTrickle(3 * time.Millisecond),
		} {
			t.Run(w.name+"/"+name, func(t *testing.T) {
				s := newServer(t, mocks.WithScript(st, st))
				got, _, err := readStream(t, s, w, w.body)
				if err != nil || got.text != "one two three four" || !got.terminal || got.finish == "" {
					t.Fatalf("%+v, err %v", got, err)
				}
				res, err := do(t, context.Background(), s, "POST", w.path, w.header, w.body)
				if err != nil {
					t.Fatal(err)
				}
				raw, err := readAllClose(res)
				if err != nil || strings.Count(string(raw), ": keep-alive\n\n") < 2 {
					t.Fatalf("%v; the wait sent no comments:\n%s", err, raw)
				}
				if last, _ := s.Journal().Last(); !strings.Contains(last.Step, name+"=") {
					t.Errorf("journal step %q", last.Step)
				}
			})
		}
	}
}
