package mocks

import (
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"sync"
)

// Background mode on the Responses API (background: true): the answer comes back queued and is
// read back by GET /v1/responses/{id}, or cancelled by POST /v1/responses/{id}/cancel (Azure:
// under /openai/v1/responses/). The fake's work takes no time but is observed in steps, so a
// test sees every status without a clock: the first read of a response finds it in_progress,
// every later read completed (or incomplete, as the answer is). A cancel before it completed
// leaves it cancelled, with no output, for good; a cancel after returns it as it is. An ID the
// server does not hold is a 404. A background stream is generated whole when it starts, then
// written (with the step's faults, e.g. Cut at CutAfter), and GET …?stream=true&starting_after=N
// serves its events after sequence number N, so a cut stream can be resumed.

// backgroundResponses holds the answers run in background mode; past storedCapacity the oldest
// is forgotten, so a long run holds bounded memory.
type backgroundResponses struct {
	mu    sync.Mutex
	runs  map[string]*backgroundRun
	order []string
	next  int
}

// backgroundRun is one background answer: its final response object, its stream's events when
// it was streamed, and how far it went.
type backgroundRun struct {
	final     obj
	events    []recEvent
	reads     int  // GETs served
	cancelled bool // cancelled before it completed
}

func (b *backgroundResponses) add(id string, final obj) { b.addStream(id, final, nil) }

// addStream holds the background answer id, with the events of its stream (nil: not streamed).
func (b *backgroundResponses) addStream(id string, final obj, events []recEvent) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.runs == nil {
		b.runs = map[string]*backgroundRun{}
	}
	if _, ok := b.runs[id]; ok {
		return
	}
	if len(b.order) == storedCapacity {
		delete(b.runs, b.order[b.next])
		b.order[b.next] = id
		b.next = (b.next + 1) % storedCapacity
	} else {
		b.order = append(b.order, id)
	}
	b.runs[id] = &backgroundRun{final: final, events: events}
}

// forget drops the run id, reporting whether there was one.
func (b *backgroundResponses) forget(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.runs[id]; !ok {
		return false
	}
	delete(b.runs, id) // its place in order is reused in turn, as an evicted one's
	return true
}

// Forget makes the stored answer or the conversation id gone, as after its retention ended or
// its deletion: a read, a cancel or the resume of the answer's stream is then a 404, as is a
// request naming the conversation, and a previous_response_id naming the answer is a 400, as
// OpenAI answers it (see [Step.Expire]). It reports whether the
// server held it.
func (s *Server) Forget(id string) bool { return s.forget(id) }

func (s *Server) forget(id string) bool {
	bg := s.background.forget(id)
	conv := s.conversations.forget(id)
	return s.responses.forget(id) || bg || conv
}

// step reads (or cancels) the run id and returns the response object it stands at, or false
// when the server holds no such run.
func (b *backgroundResponses) step(id string, cancel bool) (obj, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.runs[id]
	if !ok {
		return nil, false
	}
	done := r.reads >= 2
	switch {
	case cancel && !done:
		r.cancelled = true
	case !cancel:
		r.reads++
	}
	v := maps.Clone(r.final)
	switch {
	case r.cancelled:
		v["status"], v["output"], v["usage"], v["incomplete_details"] = "cancelled", []obj{}, nil, nil
	case r.reads < 2:
		v["status"], v["output"], v["usage"], v["incomplete_details"] = "in_progress", []obj{}, nil, nil
	}
	return v, true
}

// events returns the stream of the background answer id, false when the server holds no such
// run or it was not streamed.
func (b *backgroundResponses) stream(id string) ([]recEvent, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.runs[id]
	if !ok || r.events == nil {
		return nil, false
	}
	return r.events, true
}

// serveStored answers a read or a cancel of a background response; it returns the journal's
// note. A read with stream=true serves the events of a streamed one after starting_after (all
// of them without it), with no fault: a resumed stream runs to its end.
func (c *call) serveStored(rt routed) string {
	st, scripted := c.s.script.routeStep(rt.key())
	if scripted && (st.isError() || st.Reset || st.Stall || st.Malformed) {
		c.serve(st)
		return "route " + st.String()
	}
	c.headers(st)
	if q := c.r.URL.Query(); !rt.cancel && q.Get("stream") == "true" {
		after := -1
		if v := q.Get("starting_after"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				c.writeErrorParam(Step{Status: http.StatusBadRequest, Message: "Invalid 'starting_after': expected a non-negative integer."}, "starting_after")
				return "400 starting_after"
			}
			after = n
		}
		events, ok := c.s.background.stream(rt.stored)
		if !ok {
			c.writeErrorParam(Step{Status: http.StatusNotFound, Message: fmt.Sprintf("No streamed response found with id '%s'.", rt.stored)}, "response_id")
			return "404 response_id"
		}
		replay(c.startStream(Step{}), events, after)
		return fmt.Sprintf("200 stream after %d", after)
	}
	v, ok := c.s.background.step(rt.stored, rt.cancel)
	if !ok {
		c.writeErrorParam(Step{Status: http.StatusNotFound, Message: fmt.Sprintf("No response found with id '%s'.", rt.stored)}, "response_id")
		return "404 response_id"
	}
	c.writeJSON(http.StatusOK, v)
	return fmt.Sprintf("200 %v", v["status"])
}
