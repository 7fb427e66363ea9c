package statuspage

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// stream serves the page's server-sent events: a message with the state rendered anew as soon
// as it changes (looked at every refresh), and at least every keepAlive; each message is
// {"now": the server's wall clock in ms, "html": the inside of the page's <main>}. It stops
// when the viewer goes away, the page is closed, or after streamLife (the browser's
// EventSource then opens another). At most the page's viewers streams are open at once; one
// more is answered 503 with Retry-After.
func (p *Page) stream(w http.ResponseWriter, r *http.Request) {
	if p.open.Add(1) > int64(p.viewers) {
		p.open.Add(-1)
		w.Header().Set("Retry-After", "10")
		http.Error(w, "statuspage: too many pages open at once", http.StatusServiceUnavailable)
		return
	}
	defer p.open.Add(-1)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no") // proxies that buffer would hold every message back
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	rc := http.NewResponseController(w)
	w.WriteHeader(http.StatusOK)

	tick := time.NewTicker(p.refresh)
	defer tick.Stop()
	life := time.NewTimer(streamLife)
	defer life.Stop()
	var last []byte
	var sent time.Time
	msg := bytes.NewBufferString("retry: 2000\n") // the browser reconnects after 2 s
	for {
		f := p.frame(p.refresh / 2)
		if !bytes.Equal(f.html, last) || time.Since(sent) >= keepAlive {
			data, err := json.Marshal(message{Now: f.at.UnixMilli(), HTML: string(f.html)})
			if err != nil { // cannot happen: a number and a string
				return
			}
			msg.WriteString("id: ")
			msg.WriteString(strconv.FormatInt(f.at.UnixMilli(), 10))
			msg.WriteString("\ndata: ")
			msg.Write(data) // JSON holds no newline
			msg.WriteString("\n\n")
			// A viewer that stops reading must not hold this goroutine past writeWait, whatever
			// the server's own WriteTimeout (which would otherwise cut every stream).
			_ = rc.SetWriteDeadline(time.Now().Add(writeWait))
			if _, err := w.Write(msg.Bytes()); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
			msg.Reset()
			last, sent = f.html, time.Now()
		}
		select {
		case <-r.Context().Done():
			return
		case <-p.done:
			return
		case <-life.C:
			return
		case <-tick.C:
		}
	}
}

// message is one server-sent event of the stream.
type message struct {
	Now  int64  `json:"now"`
	HTML string `json:"html"`
}
