package resilience

// CircuitState is the state of a pipeline's circuit breaker as seen at the moment it is read.
type CircuitState int

// The circuit states. The zero value is CircuitClosed.
const (
	// CircuitClosed lets every call through.
	CircuitClosed CircuitState = iota
	// CircuitHalfOpen lets a limited number of probe calls through after the break elapsed.
	CircuitHalfOpen
	// CircuitOpen rejects every call at once with ErrCircuitOpen until the break elapses.
	CircuitOpen
	// CircuitIsolated rejects every call until Reset, whatever happens: the manual override.
	CircuitIsolated
)

// String returns "closed", "half-open", "open" or "isolated".
func (s CircuitState) String() string {
	switch s {
	case CircuitClosed:
		return "closed"
	case CircuitHalfOpen:
		return "half-open"
	case CircuitOpen:
		return "open"
	case CircuitIsolated:
		return "isolated"
	}
	return "unknown"
}

// MarshalText encodes the state as its String form, so JSON shows "open", not 2.
func (s CircuitState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }
