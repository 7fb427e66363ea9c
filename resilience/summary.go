package resilience

import (
	"net/http"
	"sync/atomic"
	"time"
)

// What a deployment can serve is the summary of its own circuit and its routes' (see
// CircuitInfo): a view one level up from a route — a provider's CircuitState for a health
// check, a dashboard's deployment — shows a provider whose only model is open as not serving,
// not as its host's closed circuit.

// routeIdle is how long a route nobody calls stays in its deployment's summary: an open circuit
// turns half-open when its break ends and stays so until a call probes it, which a model no
// longer in use never gets.
const routeIdle = 10 * time.Minute

// summary is the CircuitInfo of a deployment whose own circuit reads own: the summary of its
// routes in use with it (see CircuitInfo), own itself when it has none.
func (p *Pipeline) summary(own CircuitInfo) CircuitInfo {
	routes := p.routes.m.Load()
	if routes == nil || len(*routes) == 0 {
		return own
	}
	info := own
	info.Host = own.State
	now := p.ev.now().UnixNano()
	var paused, failing int
	var soonest time.Duration
	var failure CircuitInfo
	for _, r := range *routes {
		ri := r.OwnCircuit()
		if used := r.timeouts.used.Load(); used != 0 && now-used > int64(routeIdle) &&
			ri.State != CircuitOpen && ri.State != CircuitIsolated {
			continue // not in use: its half-open circuit waits for a call that will not come
		}
		info.Routes++
		info.CoolingFor = max(info.CoolingFor, ri.CoolingFor)
		switch {
		case ri.State == CircuitOpen || ri.State == CircuitIsolated:
			if soonest == 0 || (ri.NextProbeIn > 0 && ri.NextProbeIn < soonest) {
				soonest = ri.NextProbeIn
			}
		case ri.State == CircuitHalfOpen:
			info.Probing++
		case ri.Failing != "":
			failing++
			if ri.FailingCalls > failure.FailingCalls {
				failure = ri
			}
		case ri.CoolingFor > 0:
			paused++
		default:
			info.Serving++
		}
	}
	switch {
	case info.Routes == 0:
		return own // no route in use: the deployment's own circuit says it all
	case own.State == CircuitOpen || own.State == CircuitIsolated:
		info.Serving = 0 // nothing serves past the deployment's own circuit
		return info
	case own.State == CircuitHalfOpen:
		info.State, info.Serving = CircuitHalfOpen, 0
		return info
	case own.Failing != "" || own.CoolingFor > 0:
		info.Serving = 0 // a refused key, or a pause, holds for every model
	}
	switch {
	case info.Serving > 0:
		info.State = CircuitClosed
		info.Degraded = info.Serving < info.Routes || own.CoolingFor > 0
	case info.Probing > 0:
		info.State = CircuitHalfOpen
	case paused > 0 || failing > 0 || own.Failing != "" || own.CoolingFor > 0:
		info.State, info.Degraded = CircuitClosed, true // no outage: a pause, or a configuration that fails
	default:
		info.State, info.NextProbeIn = CircuitOpen, soonest // every route in use is open
	}
	if info.Failing == "" && info.Serving == 0 && failure.Failing != "" {
		info.Failing, info.FailingCalls = failure.Failing, failure.FailingCalls
	}
	return info
}

// fault is why a pipeline's calls keep failing for a reason of its configuration.
type fault struct {
	reason string
	calls  atomic.Int64
}

// maxFailingReason bounds the reason NoteFailing keeps.
const maxFailingReason = 300

// NoteFailing records that a call of the pipeline (a route: one model of a deployment; or the
// deployment itself, for what holds for every model) failed for a reason of its configuration
// — a model the server does not have, a key it refuses, a deployment name it does not know —
// with reason, what a person reading a health check or a dashboard should see (it must hold
// no secret: the steady client gives the provider's scrubbed message). Its circuit does not
// count it: the provider is not down, the configuration is wrong. The pipeline then reads as
// failing (CircuitInfo.Failing, and its summary as not serving) until one of its calls
// succeeds. reason is cut to 300 bytes.
func (p *Pipeline) NoteFailing(reason string) {
	if len(reason) > maxFailingReason {
		reason = reason[:maxFailingReason]
	}
	for {
		cur := p.fault.Load()
		if cur != nil && cur.reason == reason {
			cur.calls.Add(1)
			return
		}
		f := &fault{reason: reason}
		if cur != nil {
			f.calls.Store(cur.calls.Load())
		}
		f.calls.Add(1)
		if p.fault.CompareAndSwap(cur, f) {
			return
		}
	}
}

// answered clears the pipeline's failing reason once one of its calls succeeded (a 2xx), and
// its deployment's: an answer shows the key accepted too.
func (p *Pipeline) answered(resp *http.Response) {
	if resp.StatusCode >= 300 {
		return
	}
	for ; p != nil; p = p.parent {
		if p.fault.Load() != nil {
			p.fault.Store(nil)
		}
	}
}
