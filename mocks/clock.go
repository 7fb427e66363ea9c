package mocks

import "time"

// Every wait of the server — a step's Delay, Stall, ChunkDelay, FirstTokenDelay and StallFor,
// and the delays of a latency profile — goes through call.wait, on the server's timers: the
// wall clock's by default, a test's own with WithAfterFunc.

// WithAfterFunc runs the server's waits on another clock than the wall clock: after must call
// f, in its own goroutine, once d has passed on that clock, unless the stop function it
// returns is called first; stop reports whether it prevented the call, as time.Timer's Stop
// does. Every wait the server makes goes through it: a step's Delay, ChunkDelay,
// FirstTokenDelay and StallFor, a stall, and the delays of a latency profile
// ([LatencyProfile]). A wait still ends at once, without a reply, when the client goes away or
// the server closes, whatever the clock.
//
// With a manual clock a test moves time instead of sleeping, so a delay of an hour costs
// nothing and no assertion depends on the machine's speed. Give the same clock's reading to
// [WithClock], so that rate limits and outages see the same time. steady's own test clocks
// fit with a one-line adapter:
//
//	mocks.WithAfterFunc(func(d time.Duration, f func()) func() bool { return clk.AfterFunc(d, f).Stop })
//
// A nil after means the wall clock (time.AfterFunc).
func WithAfterFunc(after func(d time.Duration, f func()) (stop func() bool)) Option {
	return func(o *options) { o.after = after }
}

// wallAfter is the default of WithAfterFunc.
func wallAfter(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// wait sleeps d on the server's timers (d < 0: until the end) and reports whether the whole
// time passed, rather than the client going away or the server closing. An early end stops
// the timer, so a manual clock holds no timer for a wait that is over.
func (c *call) wait(d time.Duration) bool {
	var timeout chan struct{}
	if d >= 0 {
		timeout = make(chan struct{})
		stop := c.s.after(d, func() { close(timeout) })
		defer stop()
	}
	select {
	case <-timeout:
		return true
	case <-c.r.Context().Done():
	case <-c.s.closing:
	}
	return false
}
