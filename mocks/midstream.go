package mocks

import (
	"io"
	"time"
)

// The faults that strike a stream after it opened, placed by how many content events were
// sent (see the Step documentation): the client has its headers and its first bytes, so only
// a first-token limit, an idle-stream limit or a check of the finish reason can tell.

// SlowFirstToken is a successful stream whose headers and preamble arrive at once and whose
// first content event comes d later (see [Step.FirstTokenDelay]); d <= 0 is no delay. A JSON
// reply is not delayed.
func SlowFirstToken(d time.Duration) Step { return Step{FirstTokenDelay: d} }

// StallAfter is a successful stream that goes silent after n content events for d, then
// finishes normally; d <= 0 stalls until the client goes away or the server closes (see
// [Step.StallAfter]). n <= 0 is no stall.
func StallAfter(n int, d time.Duration) Step { return Step{StallAfter: n, StallFor: d} }

// MalformedAt is a successful stream whose n-th content event (from 1) is not valid JSON, the
// rest of the stream going on as normal (see [Step.MalformedAt]). n <= 0 malforms nothing.
func MalformedAt(n int) Step { return Step{MalformedAt: n} }

// OmitTerminal is a complete stream, finish reason and usage included, that ends without its
// terminal event: no [DONE], no message_stop (see [Step.OmitTerminal]).
func OmitTerminal() Step { return Step{OmitTerminal: true} }

// CountingContent returns a copy of st whose CutAfter and ErrorAfter count content events, not
// every event (see [Step.CountContent]): mocks.CutStream(3).CountingContent() drops the
// connection after the third word in either wire format.
func (st Step) CountingContent() Step { st.CountContent = true; return st }

// WithKeepAlive returns a copy of st whose waits for content send an SSE comment every d (see
// [Step.KeepAlive]).
func (st Step) WithKeepAlive(d time.Duration) Step { st.KeepAlive = d; return st }

// WithTrickle returns a copy of st whose waits for content send one byte every d (see
// [Step.Trickle]).
func (st Step) WithTrickle(d time.Duration) Step { st.Trickle = d; return st }

// WithFirstTokenDelay returns a copy of st whose first content event is held back for d (d <= 0:
// not held back).
func (st Step) WithFirstTokenDelay(d time.Duration) Step { st.FirstTokenDelay = d; return st }

// WithoutTerminal returns a copy of st whose complete stream ends without its terminal event
// (see [Step.OmitTerminal]).
func (st Step) WithoutTerminal() Step { st.OmitTerminal = true; return st }

// atContentCount applies, before an event past the preamble, the faults due at the current
// count of content events: the first-token delay, the stall, and the cut or error event of a
// step that counts content. It returns false when the stream must end here.
func (sw *sseWriter) atContentCount() bool {
	st, n := sw.st, sw.content
	if n == 0 && !sw.waited && st.FirstTokenDelay > 0 {
		sw.waited = true
		if !sw.waitAlive(st.FirstTokenDelay) {
			abort()
		}
	}
	if lat := sw.c.lat; n == 0 && !sw.latWaited && lat.headersFirst && lat.firstToken > 0 {
		sw.latWaited = true
		if !sw.waitAlive(lat.firstToken) {
			abort()
		}
	}
	if st.StallAfter > 0 && n == st.StallAfter && !sw.stalled {
		sw.stalled = true
		d := st.StallFor
		if d <= 0 {
			d = -1 // until the client or the server ends it
		}
		if !sw.waitAlive(d) {
			abort()
		}
	}
	if !st.CountContent {
		return true
	}
	if st.StreamError != "" && n == st.ErrorAfter {
		sw.errorEvent()
		return false
	}
	if st.Cut != "" && n == st.CutAfter {
		return sw.cut()
	}
	return true
}

// keepAliveLine is what the waits of a step with KeepAlive or Trickle send: an SSE comment,
// which a client skips.
const keepAliveLine = ": keep-alive\n\n"

// waitAlive waits d (d < 0: until the end) as call.wait does, sending the step's keep-alive
// comments or trickled bytes meanwhile, and reports whether the whole time passed.
func (sw *sseWriter) waitAlive(d time.Duration) bool {
	every, chunk := sw.st.KeepAlive, len(keepAliveLine)
	if sw.st.Trickle > 0 {
		every, chunk = sw.st.Trickle, 1
	}
	if every <= 0 {
		return sw.c.wait(d)
	}
	for d < 0 || d > 0 {
		step := every
		if d >= 0 {
			step = min(every, d)
			d -= step
		}
		if !sw.c.wait(step) {
			return false
		}
		if d == 0 {
			break // the wait is over: the event that was due goes out now
		}
		sw.trickled = sw.writeKeepAlive(sw.trickled, chunk)
	}
	if sw.trickled != 0 {
		// A line left half sent would swallow the event that is due: end the comment first.
		sw.trickled = sw.writeKeepAlive(sw.trickled, len(keepAliveLine)-sw.trickled)
	}
	return true
}

// writeKeepAlive writes the next n bytes of the keep-alive comment from position at and flushes
// them; it returns the position after them.
func (sw *sseWriter) writeKeepAlive(at, n int) int {
	for range n {
		if _, err := io.WriteString(sw.c.w, keepAliveLine[at:at+1]); err != nil {
			abort()
		}
		at = (at + 1) % len(keepAliveLine)
	}
	if sw.f != nil {
		sw.f.Flush()
	}
	return at
}
