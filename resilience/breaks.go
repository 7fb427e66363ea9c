package resilience

import "time"

// How long the circuit's breaks last.
//
// A constant break makes a poor trade: a long one keeps a provider that is back out of service
// for most of it (a one-minute outage cost up to 30 s more), a short one sends a probe every few
// seconds for as long as an outage lasts. The breaks therefore grow with the outage: the
// first opening lasts the minimum break; each failed probe doubles the break, up to the
// longest, but never beyond a tenth of the time since the outage began (nor below the
// minimum). Early in an outage, when it may end at any moment, probes come every few seconds;
// the wait after an outage ends stays about a tenth of the outage, or the minimum; an outage
// that lasts is probed once a longest break. The doubling only limits how fast a break may
// grow when no probe came for a while (a half-open circuit nobody called).
//
// The escalation is forgotten once the circuit has stayed closed for as long as its last
// break: a provider that recovered for good starts from the minimum at its next failure, while
// one that fails again sooner — that flaps — goes on with the outage it was in, so its breaks
// keep growing instead of restarting at the minimum every few seconds.

// defaultMinBreak is the first break when CircuitBreakerMinDurationSeconds is 0.
const defaultMinBreak = 5 * time.Second

// breakShare: a break lasts at most 1/breakShare of the outage so far (or the minimum).
const breakShare = 10

// minBreak resolves the first break of o: CircuitBreakerMinDurationSeconds, or, when 0,
// defaultMinBreak; never above the longest break.
func minBreak(o Options) time.Duration {
	longest := seconds(o.CircuitBreakerDurationSeconds)
	d := seconds(o.CircuitBreakerMinDurationSeconds)
	if d <= 0 {
		d = defaultMinBreak
	}
	return min(d, longest)
}

// nextBreak returns the break of an opening at now from state from, and notes it. An opening
// goes on with the outage of the latest break when it comes from half-open (the probe failed),
// or from closed before the circuit has been healthy for as long as that break; any other
// opening begins a new outage with the minimum break. Callers hold mu.
func (cb *circuit) nextBreak(from CircuitState, now int64) int64 {
	lo, hi := int64(cb.minFor), int64(cb.openFor)
	if cb.brk <= 0 || (from != CircuitHalfOpen && now-cb.healthy >= cb.brk) {
		cb.outage, cb.brk = now, lo
		return lo
	}
	cb.brk = max(lo, min(2*cb.brk, hi, (now-cb.outage)/breakShare))
	return cb.brk
}

// forgetBreaks starts the escalation over: the next opening has the minimum break. Callers
// hold mu.
func (cb *circuit) forgetBreaks() { cb.brk, cb.outage, cb.healthy = 0, 0, 0 }

// adoptBreak notes an opening adopted from another instance, from opened until until, as the
// latest break, so that a probe of this instance that fails doubles the fleet's break rather
// than its own. A break longer than the minimum tells, by the rule above, that the outage
// began at least breakShare times that break before the opening; the outage is taken to have
// begun then, if it began no earlier here. Callers hold mu.
func (cb *circuit) adoptBreak(opened, until int64) {
	d := until - opened
	if d <= 0 {
		return
	}
	cb.brk = d
	began := opened
	if d > int64(cb.minFor) {
		began -= breakShare * d
	}
	cb.outage = min(cb.outage, began)
}
