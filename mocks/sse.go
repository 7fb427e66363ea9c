package mocks

import (
	"encoding/json"
	"net/http"
)

// sseWriter writes a server-sent event stream and applies the step's stream faults: slow
// events, a cut after N events, an error event after N events.
type sseWriter struct {
	c    *call
	st   Step
	f    http.Flusher
	sent int // events written so far
}

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

// send writes one event whose data is v (raw if []byte or string, else JSON). It returns false
// when the stream must end here: the step's error event or clean cut came due. An abort cut,
// a departed client or a closing server drop the connection instead of returning.
func (sw *sseWriter) send(event string, v any) bool {
	if sw.st.StreamError != "" && sw.sent == sw.st.ErrorAfter {
		name, data := sw.c.streamErrorEvent(sw.st)
		sw.raw(name, data)
		return false
	}
	if sw.st.Cut != "" && sw.sent == sw.st.CutAfter {
		if sw.st.Cut == CutAbort {
			abort()
		}
		return false
	}
	if sw.sent > 0 && sw.st.ChunkDelay > 0 && !sw.c.wait(sw.st.ChunkDelay) {
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
	sw.raw(event, data)
	sw.sent++
	return true
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
func (c *call) streamErrorEvent(st Step) (string, []byte) {
	es := Step{Status: c.statusOf(st.StreamError), ErrorType: st.StreamError, Message: st.Message}
	if c.api == anthropic {
		b, _ := json.Marshal(anthropicError(es, c.requestID()))
		return "error", b
	}
	b, _ := json.Marshal(openAIError(es))
	return "", b
}
