package mocks

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// redacted replaces the value of every secret header in the journal.
const redacted = "REDACTED"

// secretHeaders are redacted before a request is journaled (canonical form).
var secretHeaders = []string{"Authorization", "Api-Key", "X-Api-Key", "Proxy-Authorization", "Cookie"}

// Request is one request as the server received it.
type Request struct {
	// Seq is the arrival order, from 1 (from 1 again after [Journal.Reset]). It counts every
	// request, so once the journal drops old entries the first one kept has a Seq above 1.
	Seq int
	// Arrived is when the server began handling the request, before reading its body.
	Arrived time.Time
	// Method, Path and Query are the request line (Query without the '?').
	Method, Path, Query string
	// Header holds the request headers; secrets (Authorization, api-key, x-api-key, …) read
	// "REDACTED".
	Header http.Header
	// Body is the request body, or its first JournalLimits.MaxBodyBytes bytes (1 MiB by
	// default) when it is longer; BodyTruncated then says so.
	Body []byte
	// BodyLen is the length of the body the server read: len(Body) unless the journal cut it.
	// For a body over the server's limit (answered 413) it is what the server read before
	// refusing it, 0 when Content-Length alone was enough.
	BodyLen int
	// BodyTruncated reports that Body holds only the first part of the body the server read.
	BodyTruncated bool
	// Scenario names the scenario that answered ("" for the default script, "chaos" for a
	// chaos fault).
	Scenario string
	// Step describes how the server answered ("ok", "503", "429 retry-after=150ms", "stall", …);
	// a request rejected before a step was chosen (auth, bad body) reads like "401 auth".
	Step string
	// FirstTokenDelay is the time to first token its latency profile drew for the request
	// ([LatencyProfile]: FirstToken plus jitter, or Straggler), set before the server began to
	// wait it; 0 when no profile delayed it. The step's own delays are not in it.
	FirstTokenDelay time.Duration
	// Straggler reports that the latency profile made the request a straggler: it waited the
	// profile's Straggler.
	Straggler bool
}

// RetryCount returns the X-Stainless-Retry-Count header that the official SDKs send on every
// attempt (0 on the first), and false when it is absent or not a number.
func (r Request) RetryCount() (int, bool) {
	n, err := strconv.Atoi(r.Header.Get("X-Stainless-Retry-Count"))
	return n, err == nil
}

// The journal's default limits, what a zero field of JournalLimits means. They are large
// enough that a test never notices them, and small enough that a dev server left running for
// weeks holds at most 64 MiB of requests.
const (
	// DefaultJournalEntries is how many requests the journal keeps by default: 10 000.
	DefaultJournalEntries = 10000
	// DefaultJournalBodyBytes is how much of each body the journal keeps by default: 1 MiB.
	DefaultJournalBodyBytes = 1 << 20
	// DefaultJournalTotalBytes is what the kept requests may hold together by default: 64 MiB.
	DefaultJournalTotalBytes = 64 << 20
)

// entryOverhead is what a journal entry counts toward MaxTotalBytes besides its body, headers,
// path and query: its record and header map, roughly.
const entryOverhead = 512

// JournalLimits bound what a [Journal] keeps, so that a server left running for days, or sent
// large bodies, holds a bounded amount of memory. Beyond a limit the oldest requests are
// dropped; the counters ([Journal.Len], [Journal.MaxConcurrency], [Journal.Stats],
// [Journal.Wait]) still count every request, kept or dropped. Set them with
// [WithJournalLimits] or a scenario file's "journal" object.
type JournalLimits struct {
	// MaxEntries is how many requests the journal keeps; when one more arrives, the oldest is
	// dropped. 0 means DefaultJournalEntries (10 000); a negative value keeps none (the
	// counters still count).
	MaxEntries int `json:"maxEntries,omitempty"`
	// MaxBodyBytes is how much of each request body the journal keeps; a longer body is cut to
	// its first MaxBodyBytes bytes and its Request marked BodyTruncated. 0 means
	// DefaultJournalBodyBytes (1 MiB); a negative value keeps no body at all (every non-empty
	// body is then marked truncated).
	MaxBodyBytes int `json:"maxBodyBytes,omitempty"`
	// MaxTotalBytes bounds the bytes the kept requests hold together: each counts its kept
	// body, its headers (names and values), path and query, plus 512 bytes for its record.
	// When a new request would exceed it, the oldest are dropped until it fits; a request that
	// alone exceeds it is not kept. 0 means DefaultJournalTotalBytes (64 MiB); a negative
	// value keeps none.
	MaxTotalBytes int64 `json:"maxTotalBytes,omitempty"`
}

// resolved returns l with its defaults filled in and negative values made 0.
func (l JournalLimits) resolved() JournalLimits {
	if l.MaxEntries == 0 {
		l.MaxEntries = DefaultJournalEntries
	}
	if l.MaxBodyBytes == 0 {
		l.MaxBodyBytes = DefaultJournalBodyBytes
	}
	if l.MaxTotalBytes == 0 {
		l.MaxTotalBytes = DefaultJournalTotalBytes
	}
	l.MaxEntries, l.MaxBodyBytes, l.MaxTotalBytes = max(l.MaxEntries, 0), max(l.MaxBodyBytes, 0), max(l.MaxTotalBytes, 0)
	return l
}

// WithJournalLimits bounds what the server's journal keeps (see [JournalLimits]): zero fields
// keep their defaults, negative ones keep nothing. For no limit, pass math.MaxInt (and
// math.MaxInt64 for MaxTotalBytes), knowing that memory then grows with every request.
func WithJournalLimits(l JournalLimits) Option { return func(o *options) { o.journal = l } }

// JournalStats are a journal's counters since the server started or [Journal.Reset].
type JournalStats struct {
	// Received counts every request, kept or not (the same as [Journal.Len]).
	Received int `json:"received"`
	// Kept is how many requests the journal holds now (len of [Journal.Requests]).
	Kept int `json:"kept"`
	// Dropped counts the requests the journal let go, the oldest first, to stay within
	// MaxEntries and MaxTotalBytes: Received = Kept + Dropped.
	Dropped int `json:"dropped"`
	// TruncatedBodies counts the requests whose body was cut to MaxBodyBytes, kept or since
	// dropped.
	TruncatedBodies int `json:"truncatedBodies"`
	// KeptBytes is what the kept requests count toward MaxTotalBytes.
	KeptBytes int64 `json:"keptBytes"`
	// Stragglers counts the requests a latency profile made stragglers ([Request].Straggler),
	// kept or since dropped.
	Stragglers int `json:"stragglers"`
	// ContentEvents counts the content events (a word, a tool call fragment…) the server's
	// streams wrote, for every request: what a client that cancels streams was sent, and may
	// be billed for.
	ContentEvents int64 `json:"contentEvents"`
}

// Journal records the requests a [Server] received, within its [JournalLimits], and how many
// were in flight at once. It is safe for concurrent use; accessors return copies.
type Journal struct {
	mu        sync.Mutex
	limits    JournalLimits // resolved
	reqs      []*Request    // the kept requests, oldest first
	sizes     []int64       // what each of reqs counts toward limits.MaxTotalBytes
	bytes     int64         // the sum of sizes
	received  int
	dropped   int
	truncated int
	straggled int
	// content counts the content events written to streams (Stats.ContentEvents).
	content  atomic.Int64
	inFlight int
	peak     int
	arrived  chan struct{} // closed and replaced on every arrival
}

func newJournal(l JournalLimits) *Journal {
	return &Journal{limits: l.resolved(), arrived: make(chan struct{})}
}

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

// record counts r and keeps it (with secrets redacted and its body cut to the limit) within
// the journal's limits, dropping the oldest entries to make room. It returns the entry for
// later updates under j.mu through setStep; a dropped entry may still be updated, unseen.
func (j *Journal) record(r *http.Request, body []byte, arrived time.Time) *Request {
	h := r.Header.Clone()
	for _, k := range secretHeaders {
		if _, ok := h[k]; ok {
			h[k] = []string{redacted}
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	l := j.limits
	kept, truncated := body, false
	if len(body) > l.MaxBodyBytes {
		// A copy, so that the journal does not keep the whole body alive through a slice.
		kept, truncated = append([]byte(nil), body[:l.MaxBodyBytes]...), true
		j.truncated++
	} else if cap(body)-len(body) > len(body)/8+64 {
		kept = append([]byte(nil), body...) // do not keep a buffer's slack
	}
	j.received++
	e := &Request{
		Seq:           j.received,
		Arrived:       arrived,
		Method:        r.Method,
		Path:          r.URL.Path,
		Query:         r.URL.RawQuery,
		Header:        h,
		Body:          kept,
		BodyLen:       len(body),
		BodyTruncated: truncated,
	}
	size := int64(entryOverhead + len(kept) + len(e.Method) + len(e.Path) + len(e.Query))
	for k, vs := range h {
		for _, v := range vs {
			size += int64(len(k) + len(v))
		}
	}
	j.reqs, j.sizes = append(j.reqs, e), append(j.sizes, size)
	j.bytes += size
	for len(j.reqs) > 0 && (len(j.reqs) > l.MaxEntries || j.bytes > l.MaxTotalBytes) {
		j.dropOldest()
	}
	close(j.arrived)
	j.arrived = make(chan struct{})
	return e
}

// dropOldest lets go of the oldest kept request; j.mu must be held. The slot is cleared so
// that the backing array does not keep the request alive; append later copies only the kept
// window when it grows, so dropping is amortised O(1).
func (j *Journal) dropOldest() {
	j.bytes -= j.sizes[0]
	j.reqs[0], j.sizes[0] = nil, 0
	j.reqs, j.sizes = j.reqs[1:], j.sizes[1:]
	j.dropped++
}

// setStep notes how e was answered. A scenario name longer than maxScenarioName (an unknown
// name sent in a huge header) is cut, the header itself being kept as sent.
func (j *Journal) setStep(e *Request, scenario, step string) {
	j.mu.Lock()
	e.Scenario, e.Step = clip(scenario, maxScenarioName), step
	j.mu.Unlock()
}

// setLatency notes the first-token delay a latency profile gave e.
func (j *Journal) setLatency(e *Request, d time.Duration, straggler bool) {
	j.mu.Lock()
	e.FirstTokenDelay, e.Straggler = d, straggler
	if straggler {
		j.straggled++
	}
	j.mu.Unlock()
}

// copyOf returns a copy of e that shares no memory with it; j.mu must be held.
func copyOf(e *Request) Request {
	out := *e
	out.Header = e.Header.Clone()
	out.Body = append([]byte(nil), e.Body...)
	return out
}

// Requests returns a copy of every request the journal keeps, in arrival order: all of them
// unless the journal's limits dropped the oldest (see [JournalLimits], [Journal.Stats]).
func (j *Journal) Requests() []Request {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]Request, len(j.reqs))
	for i, e := range j.reqs {
		out[i] = copyOf(e)
	}
	return out
}

// Len returns the number of requests received since the server started or the last Reset,
// including those the journal no longer keeps.
func (j *Journal) Len() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.received
}

// Stats returns the journal's counters: requests received, kept and dropped, bodies cut, the
// bytes kept and the stragglers.
func (j *Journal) Stats() JournalStats {
	j.mu.Lock()
	defer j.mu.Unlock()
	return JournalStats{Received: j.received, Kept: len(j.reqs), Dropped: j.dropped,
		TruncatedBodies: j.truncated, KeptBytes: j.bytes, Stragglers: j.straggled, ContentEvents: j.content.Load()}
}

// Last returns the latest request kept, and false when the journal keeps none. It copies
// that request only.
func (j *Journal) Last() (Request, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.reqs) == 0 {
		return Request{}, false
	}
	return copyOf(j.reqs[len(j.reqs)-1]), true
}

// Intervals returns the time between consecutive arrivals of the requests kept:
// len(Requests())-1 values, or none.
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
// It counts every request, kept in the journal or not.
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

// Wait blocks until at least n requests have arrived (kept or not), or ctx ends (returning its
// error). It lets a test act once a request reached the server (to close a stall, say)
// without sleeping.
func (j *Journal) Wait(ctx context.Context, n int) error {
	for {
		j.mu.Lock()
		got, ch := j.received, j.arrived
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

// Reset forgets every request and zeroes the counters, the concurrency peak included
// (requests in flight stay counted); the limits stay.
func (j *Journal) Reset() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.reqs, j.sizes, j.bytes = nil, nil, 0
	j.received, j.dropped, j.truncated, j.straggled = 0, 0, 0, 0
	j.content.Store(0)
	j.peak = j.inFlight
}

// JournalView is what GET /_fake/journal answers (see [AdminClient.Journal]): the journal's
// counters and a summary of its latest requests, without their headers or bodies.
type JournalView struct {
	Stats    JournalStats   `json:"stats"`
	Requests []JournalEntry `json:"requests"`
}

// JournalEntry summarises one [Request] of the journal for the admin API: how it was
// answered, not what it said.
type JournalEntry struct {
	Seq      int       `json:"seq"`
	Arrived  time.Time `json:"arrived"`
	Method   string    `json:"method"`
	Path     string    `json:"path"`
	Scenario string    `json:"scenario,omitempty"`
	Step     string    `json:"step"`
	// FirstTokenDelayMs is the delay a latency profile drew for the request, in milliseconds.
	FirstTokenDelayMs float64 `json:"firstTokenDelayMs,omitempty"`
	Straggler         bool    `json:"straggler,omitempty"`
}

// last summarises the latest n requests kept, oldest first.
func (j *Journal) last(n int) []JournalEntry {
	j.mu.Lock()
	defer j.mu.Unlock()
	reqs := j.reqs[max(len(j.reqs)-n, 0):]
	out := make([]JournalEntry, len(reqs))
	for i, e := range reqs {
		out[i] = JournalEntry{Seq: e.Seq, Arrived: e.Arrived, Method: e.Method, Path: clip(e.Path, 256), Scenario: e.Scenario,
			Step: e.Step, FirstTokenDelayMs: toMs(e.FirstTokenDelay), Straggler: e.Straggler}
	}
	return out
}
