package mocks

import (
	"encoding/json"
	"net/http"
)

// sseWriter writes a server-sent event stream and applies the step's stream faults: slow
// events, a cut or an error event after N events, and the faults placed by content count (see
// midstream.go).
type sseWriter struct {
	c       *call
	st      Step
	f       http.Flusher
	sent    int  // events written so far
	content int  // content events written so far
	waited  bool // the first-token delay is over
	stalled bool // the mid-stream stall is over
	// trickled is where the keep-alive comment a trickling step sends stands (see waitAlive).
	trickled int

	latWaited bool // the latency profile's first-token delay is over (HeadersFirst)
}

// eventKind says where an event stands in a stream (see the Step documentation).
type eventKind int

const (
	preambleEvent eventKind = iota // opens the stream, before any content
	contentEvent                   // carries a piece of the answer
	otherEvent                     // anything after the preamble that is not content
)

// startStream sends the 200 headers of an event stream and flushes them, so the client sees the
// stream open before the first event.
func (c *call) startStream(st Step) *sseWriter {
	h := c.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Del("Content-Length")
	c.w.WriteHeader(http.StatusOK)
	f, _ := c.w.(http.Flusher)
	if f != nil {
		f.Flush()
	}
	return &sseWriter{c: c, st: st, f: f}
}

// open writes a preamble event, delta a content event and send any other event; each returns
// false when the stream must end here (see emit).
func (sw *sseWriter) open(event string, v any) bool  { return sw.emit(preambleEvent, event, v) }
func (sw *sseWriter) delta(event string, v any) bool { return sw.emit(contentEvent, event, v) }
func (sw *sseWriter) send(event string, v any) bool  { return sw.emit(otherEvent, event, v) }

// emit writes one event whose data is v (raw if []byte or string, else JSON). It returns false
// when the stream must end here: the step's error event or clean cut came due. An abort cut,
// a departed client or a closing server drop the connection instead of returning.
func (sw *sseWriter) emit(kind eventKind, event string, v any) bool {
	if kind != preambleEvent && !sw.atContentCount() {
		return false
	}
	st := sw.st
	if st.StreamError != "" && !st.CountContent && sw.sent == st.ErrorAfter {
		sw.errorEvent()
		return false
	}
	if st.Cut != "" && !st.CountContent && sw.sent == st.CutAfter {
		return sw.cut()
	}
	if sw.sent > 0 && st.ChunkDelay > 0 && !sw.c.wait(st.ChunkDelay) {
		abort()
	}
	if d := sw.c.lat.chunk; kind == contentEvent && sw.content > 0 && d > 0 && !sw.c.wait(d) {
		abort()
	}
	var data []byte
	switch d := v.(type) {
	case []byte:
		data = d
	case string:
		data = []byte(d)
	default:
		data, _ = json.Marshal(v)
	}
	if kind == contentEvent {
		sw.content++
		sw.c.s.journal.content.Add(1)
		if sw.content == st.MalformedAt {
			data = data[:len(data)/2] // an object without its end never parses
		}
	}
	sw.raw(event, data)
	sw.sent++
	return true
}

// errorEvent sends the step's in-stream error event.
func (sw *sseWriter) errorEvent() {
	name, data := sw.c.streamErrorEvent(sw.st, sw.sent)
	sw.raw(name, data)
}

// cut ends the stream as the step's Cut says: it drops the connection (abort) or returns false
// for the caller to end the body cleanly.
func (sw *sseWriter) cut() bool {
	if sw.st.Cut == CutAbort {
		abort()
	}
	return false
}

// raw writes one event as is and flushes it.
func (sw *sseWriter) raw(event string, data []byte) {
	buf := make([]byte, 0, len(event)+len(data)+16)
	if event != "" {
		buf = append(buf, "event: "...)
		buf = append(buf, event...)
		buf = append(buf, '\n')
	}
	buf = append(buf, "data: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	if _, err := sw.c.w.Write(buf); err != nil {
		abort()
	}
	if sw.f != nil {
		sw.f.Flush()
	}
}

// streamErrorEvent returns the in-stream error event for st in the call's dialect.
func (c *call) streamErrorEvent(st Step, seq int) (string, []byte) {
	es := Step{Status: c.statusOf(st.StreamError), ErrorType: st.StreamError, Message: st.Message}
	if c.api == anthropic {
		b, _ := json.Marshal(anthropicError(es, c.requestID()))
		return "error", b
	}
	if c.endpoint == responsesEndpoint {
		b, _ := json.Marshal(respStreamError(st, seq))
		return "error", b
	}
	b, _ := json.Marshal(openAIError(es))
	return "", b
}
