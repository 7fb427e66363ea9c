package mocks

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// redacted replaces the value of every secret header in the journal.
const redacted = "REDACTED"

// secretHeaders are redacted before a request is journaled (canonical form).
var secretHeaders = []string{"Authorization", "Api-Key", "X-Api-Key", "Proxy-Authorization", "Cookie"}

// Request is one request as the server received it.
type Request struct {
	// Seq is the arrival order, from 1.
	Seq int
	// Arrived is when the server began handling the request, before reading its body.
	Arrived time.Time
	// Method, Path and Query are the request line (Query without the '?').
	Method, Path, Query string
	// Header holds the request headers; secrets (Authorization, api-key, x-api-key, …) read
	// "REDACTED".
	Header http.Header
	// Body is the request body (at most 10 MiB).
	Body []byte
	// Scenario names the scenario that answered ("" for the default script, "chaos" for a
	// chaos fault).
	Scenario string
	// Step describes how the server answered ("ok", "503", "429 retry-after=150ms", "stall", …);
	// a request rejected before a step was chosen (auth, bad body) reads like "401 auth".
	Step string
}

// RetryCount returns the X-Stainless-Retry-Count header that the official SDKs send on every
// attempt (0 on the first), and false when it is absent or not a number.
func (r Request) RetryCount() (int, bool) {
	n, err := strconv.Atoi(r.Header.Get("X-Stainless-Retry-Count"))
	return n, err == nil
}

// Journal records the requests a [Server] received and how many were in flight at once. It is
// safe for concurrent use; accessors return copies.
type Journal struct {
	mu       sync.Mutex
	reqs     []*Request
	inFlight int
	peak     int
	arrived  chan struct{} // closed and replaced on every arrival
}

func newJournal() *Journal { return &Journal{arrived: make(chan struct{})} }

// enter counts a request in flight; leave undoes it.
func (j *Journal) enter() {
	j.mu.Lock()
	j.inFlight++
	j.peak = max(j.peak, j.inFlight)
	j.mu.Unlock()
}

func (j *Journal) leave() {
	j.mu.Lock()
	j.inFlight--
	j.mu.Unlock()
}

// record appends r (taking ownership) with secrets redacted and returns it for later updates
// under j.mu through setStep.
func (j *Journal) record(r *http.Request, body []byte, arrived time.Time) *Request {
	h := r.Header.Clone()
	for _, k := range secretHeaders {
		if _, ok := h[k]; ok {
			h[k] = []string{redacted}
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	e := &Request{
		Seq:     len(j.reqs) + 1,
		Arrived: arrived,
		Method:  r.Method,
		Path:    r.URL.Path,
		Query:   r.URL.RawQuery,
		Header:  h,
		Body:    body,
	}
	j.reqs = append(j.reqs, e)
	close(j.arrived)
	j.arrived = make(chan struct{})
	return e
}

// setStep notes how e was answered.
func (j *Journal) setStep(e *Request, scenario, step string) {
	j.mu.Lock()
	e.Scenario, e.Step = scenario, step
	j.mu.Unlock()
}

// Requests returns a copy of every request received so far, in arrival order.
func (j *Journal) Requests() []Request {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]Request, len(j.reqs))
	for i, e := range j.reqs {
		out[i] = *e
		out[i].Header = e.Header.Clone()
		out[i].Body = append([]byte(nil), e.Body...)
	}
	return out
}

// Len returns the number of requests received so far.
func (j *Journal) Len() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.reqs)
}

// Last returns the latest request, and false when there is none.
func (j *Journal) Last() (Request, bool) {
	reqs := j.Requests()
	if len(reqs) == 0 {
		return Request{}, false
	}
	return reqs[len(reqs)-1], true
}

// Intervals returns the time between consecutive arrivals: len(Requests())-1 values, or none.
func (j *Journal) Intervals() []time.Duration {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []time.Duration
	for i := 1; i < len(j.reqs); i++ {
		out = append(out, j.reqs[i].Arrived.Sub(j.reqs[i-1].Arrived))
	}
	return out
}

// MaxConcurrency returns the highest number of requests that were in flight at once. A request
// is in flight from its arrival until its handler returns (a stream: until its last event).
func (j *Journal) MaxConcurrency() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.peak
}

// InFlight returns the number of requests in flight now.
func (j *Journal) InFlight() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.inFlight
}

// Wait blocks until at least n requests have arrived, or ctx ends (returning its error). It lets
// a test act once a request reached the server (to close a stall, say) without sleeping.
func (j *Journal) Wait(ctx context.Context, n int) error {
	for {
		j.mu.Lock()
		got, ch := len(j.reqs), j.arrived
		j.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Reset forgets every request and the concurrency peak (requests in flight stay counted).
func (j *Journal) Reset() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.reqs = nil
	j.peak = j.inFlight
}
