package mocks

import (
	"net/http"
	"sync"
	"sync/atomic"
)

// ConcurrencyLimit makes the fake serve at most Max calls at once, as a provider whose capacity
// is full: a call that arrives while Max are being served (from the moment its request is read
// until its answer, stream included, is written) is refused at once, before any rate limit or
// script step, the way each API says it is overloaded:
//
//   - Anthropic: 529 with {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}};
//   - OpenAI and Azure: 503 with an error of type server_error, "The server is overloaded or
//     not ready yet." (OpenAI's answer to an overloaded engine), or 529 with OpenAIStatus.
//
// A refused call costs nothing from the rate limits and takes no step of a script. Calls to
// GET /v1/models are never counted. Change the limit while the server runs with
// [Server.SetConcurrencyLimit]; [Server.Concurrency] tells what it did.
type ConcurrencyLimit struct {
	// Max is the number of calls served at once; 0 or less: no limit.
	Max int
	// OpenAIStatus is the status of an OpenAI or Azure call over the limit: 503 (the default)
	// or 529.
	OpenAIStatus int
}

// WithConcurrencyLimit enforces l (see ConcurrencyLimit).
func WithConcurrencyLimit(l ConcurrencyLimit) Option { return func(o *options) { o.concurrency = &l } }

// ConcurrencyStats is what the concurrency limit did (Server.Concurrency).
type ConcurrencyStats struct {
	// Max is the limit now (0: none); InFlight the calls being served now, Peak the most served
	// at once since the server started.
	Max, InFlight, Peak int
	// Served counts the calls let through, Refused those answered 529 or 503 for the limit.
	Served, Refused int64
}

// concurrency is the server's count of calls in flight, and its limit.
type concurrency struct {
	max, inflight, peak atomic.Int64
	served, refused     atomic.Int64
	openAIStatus        int
	mu                  sync.Mutex // orders the count against the limit, for an exact limit
}

func newConcurrency(l *ConcurrencyLimit) *concurrency {
	c := &concurrency{openAIStatus: http.StatusServiceUnavailable}
	if l != nil {
		c.max.Store(int64(max(l.Max, 0)))
		if l.OpenAIStatus == 529 {
			c.openAIStatus = 529
		}
	}
	return c
}

// SetConcurrencyLimit changes the number of calls the server serves at once (see
// ConcurrencyLimit) while it runs; 0 or less removes the limit. Calls in flight above a lower
// limit finish; the next ones are refused until the count is below it.
func (s *Server) SetConcurrencyLimit(n int) { s.conc.max.Store(int64(max(n, 0))) }

// Concurrency returns what the concurrency limit did so far.
func (s *Server) Concurrency() ConcurrencyStats {
	c := s.conc
	return ConcurrencyStats{Max: int(c.max.Load()), InFlight: int(c.inflight.Load()), Peak: int(c.peak.Load()),
		Served: c.served.Load(), Refused: c.refused.Load()}
}

// admit counts call c in, or refuses it with the provider's overloaded answer when the limit
// is reached; it reports whether c goes on, in which case the caller must call leave when its
// answer is written.
func (cc *concurrency) admit(c *call, entry *Request) bool {
	if c.endpoint == modelsEndpoint {
		return true
	}
	cc.mu.Lock()
	limit := cc.max.Load()
	if limit > 0 && cc.inflight.Load() >= limit {
		cc.mu.Unlock()
		cc.refused.Add(1)
		st := Step{Status: 529}
		if c.api != anthropic {
			st.Status = cc.openAIStatus
		}
		c.s.journal.setStep(entry, "", st.String()+" (concurrency limit)")
		c.serve(st)
		return false
	}
	n := cc.inflight.Add(1)
	cc.mu.Unlock()
	cc.served.Add(1)
	for {
		p := cc.peak.Load()
		if n <= p || cc.peak.CompareAndSwap(p, n) {
			break
		}
	}
	return true
}

// leave counts a call that admit let through out again.
func (cc *concurrency) leave(c *call) {
	if c.endpoint != modelsEndpoint {
		cc.inflight.Add(-1)
	}
}
