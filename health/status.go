package health

import (
	"net/http"

	"github.com/steadyllm/steady/resilience"
)

// Status is a health status in the vocabulary of the IETF health-check draft
// (draft-inadarei-api-health-check): pass, warn or fail.
type Status string

// The three statuses, from best to worst.
const (
	// StatusPass means the provider can be called: its circuit is closed.
	StatusPass Status = "pass"
	// StatusWarn means calls may fail: the circuit is half-open and probing, or, in a
	// fallback chain, some providers are down while another still passes.
	StatusWarn Status = "warn"
	// StatusFail means calls fail at once: the circuit is open or isolated.
	StatusFail Status = "fail"
)

// StatusOf maps a circuit state to a health status: closed is pass, half-open is warn,
// open and isolated are fail. A state this package does not know is fail, so a source
// that reports nonsense never looks healthy.
func StatusOf(s resilience.CircuitState) Status {
	switch s {
	case resilience.CircuitClosed:
		return StatusPass
	case resilience.CircuitHalfOpen:
		return StatusWarn
	}
	return StatusFail
}

// HTTPStatus returns the response code the handler uses for s: 200 for pass and warn,
// 503 for fail (and for any unknown status).
func (s Status) HTTPStatus() int {
	if s == StatusPass || s == StatusWarn {
		return http.StatusOK
	}
	return http.StatusServiceUnavailable
}

// rank orders statuses from best (0) to worst (2); an unknown status ranks as fail.
func (s Status) rank() int {
	switch s {
	case StatusPass:
		return 0
	case StatusWarn:
		return 1
	}
	return 2
}

// aggregate combines the statuses of sources (a group of deployments counting as one). Without a fallback chain the worst wins. In a
// fallback chain a call still succeeds while any provider is up, so the chain fails only
// when every member fails; anything short of that is at worst a warning.
func aggregate(statuses []Status, fallback bool) Status {
	if len(statuses) == 0 {
		return StatusPass
	}
	worst, best := StatusPass, StatusFail
	for _, s := range statuses {
		if s.rank() > worst.rank() {
			worst = s
		}
		if s.rank() < best.rank() {
			best = s
		}
	}
	if fallback && worst.rank() == StatusFail.rank() && best.rank() < StatusFail.rank() {
		return StatusWarn
	}
	return worst
}
