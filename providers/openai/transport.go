package openai

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/internal/wire"
)

// exchange records what the HTTP layer saw during one call, for the call that made it: the
// response status and headers (go-openai drops them on error paths, and always on streams),
// whether the error body was cut at the limit, and the guards around a successful body.
//
// An exchange is the context of the call it belongs to: the doer finds it there. go-openai
// calls HTTPDoer.Do synchronously, on the caller's goroutine, so the writes in Do happen
// before the call returns and the reads that follow need no locking. The call provides the
// room for the body's guard (see chatCall and stream), so that one allocation per call holds
// them all.
type exchange struct {
	context.Context
	streaming bool        // guard a successful body as an event stream
	sent      bool        // Do was called: go-openai's own checks passed
	status    int         // 0 until a response arrived
	header    http.Header // the response headers, nil until a response arrived
	cut       bool        // the error body was longer than Limits.MaxErrorBodyBytes
	body      *wire.Limited
	guard     *wire.SSEGuard
	bodyRoom  *wire.Limited        // where to keep body; nil: allocate it
	head      *[wire.HeadSize]byte // where body keeps its first bytes; nil: nowhere
	guardRoom *wire.SSEGuard       // where to keep guard; nil: allocate it
	// prefill is the flavour in which the request's last message is marked for the server
	// to continue (ChatRequest.Prefill), "" for none: go-openai has no field for it.
	prefill PrefillFlavor
}

// readErr returns the error the body of a 2xx failed with, as the body returned it (see
// wire.Limited.ReadErr), nil when it has not failed or there is none.
func (x *exchange) readErr() error {
	switch {
	case x.guard != nil:
		return x.guard.ReadErr()
	case x.body != nil:
		return x.body.ReadErr()
	}
	return nil
}

type exchangeKey struct{}

// Value returns the exchange itself for exchangeKey and defers everything else.
func (x *exchange) Value(key any) any {
	if _, ok := key.(exchangeKey); ok {
		return x
	}
	return x.Context.Value(key)
}

// chatCall is the exchange of a call whose answer is one JSON document, with the room for its
// bounded body and, lent for the call, a buffer for the body's head.
type chatCall struct {
	exchange
	limited wire.Limited
}

// heads lends chat calls the buffer in which their body's first bytes are kept: they are
// needed only until the call returns (to describe a body that held no answer), so one buffer
// per call in flight serves instead of one per call.
var heads = sync.Pool{New: func() any { return new([wire.HeadSize]byte) }}

func newChatCall(ctx context.Context) *chatCall {
	c := &chatCall{}
	c.Context, c.bodyRoom, c.head = ctx, &c.limited, heads.Get().(*[wire.HeadSize]byte)
	return c
}

// done gives the head buffer back, once the call has returned and nothing reads the body.
func (c *chatCall) done() {
	c.limited.Reset(nil, 0, "", nil)
	heads.Put(c.head)
	c.head = nil
}

// doer is the go-openai HTTPDoer in front of the configured *http.Client. It applies to every
// call of the go-openai client, including those made through Provider.Client, and never
// modifies the request (a prefilled chat is sent as a copy, its body marked: markPrefill). It
//
//   - refuses redirects (the client it sends through never follows them): a 3xx with a
//     Location becomes a KindRedirected *providers.Error;
//   - replaces every failure body (status < 200 or >= 400) with an in-memory copy of at most
//     Limits.MaxErrorBodyBytes and closes the original at once: go-openai reads error bodies
//     without a limit, and on its stream and raw paths never closes them, which would pin the
//     connection and the pipeline's bulkhead slot, timer and breaker probe;
//   - bounds a successful JSON answer by Limits.MaxResponseBytes, keeping its first bytes in
//     the call's exchange;
//   - guards a successful stream with a wire.SSEGuard (event limits, [DONE]);
//   - records the response status and headers in the call's exchange, when there is one.
type doer struct {
	client wire.Sender
	limits providers.Limits
	errs   wire.Errors
}

// Do sends req through the configured client.
func (d doer) Do(req *http.Request) (*http.Response, error) {
	x, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if x != nil {
		x.sent = true
		if x.prefill != "" {
			r, err := markPrefill(req, x.prefill)
			if err != nil {
				return nil, d.errs.New(providers.KindBadRequest, "Prefill: "+err.Error())
			}
			req = r
		}
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, err
	}
	if x != nil {
		x.status, x.header = resp.StatusCode, resp.Header
	}
	if e := d.errs.Redirect(resp); e != nil {
		_ = resp.Body.Close()
		return nil, e
	}
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusBadRequest {
		body, cut, _ := wire.ReadError(resp.Body, d.limits.MaxErrorBodyBytes)
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if x != nil {
			x.cut = cut
		}
		return resp, nil
	}
	if x != nil && x.streaming {
		if wire.IsJSON(resp.Header) {
			// A JSON 2xx cannot be the answer to a stream request: a gateway's error envelope,
			// usually. Classify it as such here.
			defer resp.Body.Close()
			body, _, err := wire.ReadError(resp.Body, d.limits.MaxErrorBodyBytes)
			if err != nil { // cut short (the pipeline's timeout, say): not the server's answer
				e := d.errs.Failure(req.Context(), "reading the response", err)
				e.StatusCode, e.RequestID = resp.StatusCode, d.errs.Field(wire.RequestID(resp.Header))
				return nil, e
			}
			return nil, d.notAnAnswer(resp, body)
		}
		g := x.guardRoom
		if g == nil {
			g = new(wire.SSEGuard)
		}
		g.Reset(resp.Body, d.limits.MaxEventBytes)
		x.guard, resp.Body = g, g
		// go-openai keeps the response for the stream's life but never reads its Request: let
		// go of the request, its headers and its encoded body (a long prompt, often) now.
		resp.Request = nil
		return resp, nil
	}
	var lim *wire.Limited
	var head *[wire.HeadSize]byte
	if x != nil && x.bodyRoom != nil {
		lim, head = x.bodyRoom, x.head
	} else {
		lim = new(wire.Limited) // no one will ask for the head
	}
	lim.Reset(resp.Body, d.limits.MaxResponseBytes, "MaxResponseBytes", head)
	if x != nil {
		x.body = lim
	}
	resp.Body = lim
	return resp, nil
}

// notAnAnswer is the error for a 2xx body that holds no answer: an error envelope is
// classified like the error it carries, anything else is KindUnavailable.
func (d doer) notAnAnswer(resp *http.Response, body []byte) *providers.Error {
	e := envelopeError(d.errs, body)
	if e == nil {
		e = d.errs.New(providers.KindUnavailable, "the server answered "+http.StatusText(resp.StatusCode)+
			" without an answer: "+wire.Describe(body))
	}
	e.StatusCode = resp.StatusCode
	e.RequestID = d.errs.Field(wire.RequestID(resp.Header))
	e.RateLimit = providers.ParseRateLimit(resp.Header, time.Now())
	return e
}
