package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/internal/wire"
)

// wireError is Anthropic's error envelope, as an HTTP error body and as the data of an
// "error" event inside a stream: {"type":"error","error":{"type","message"},"request_id"}.
type wireError struct {
	Type  string `json:"type"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Details struct {
			ErrorCode string `json:"error_code"`
		} `json:"details"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

// stopRefusal is the stop_reason of an answer the model declined to give (or that a
// streaming classifier ended part way): an error of kind refused, not a success.
const stopRefusal = "refusal"

// wireStopDetails is stop_details, which says more of a stop reason: for a refusal its
// category ("cyber", "bio"…, null for none) and a human-readable explanation (null for none).
// The answer and message_delta carry it; servers that predate it send nothing, or null.
type wireStopDetails struct {
	Type        string `json:"type"`
	Category    string `json:"category"`
	Explanation string `json:"explanation"`
}

// refusal is the error of an answer whose stop_reason is "refusal", with what its
// stop_details say (d may be nil).
func (p *Provider) refusal(d *wireStopDetails) *providers.Error {
	if d == nil {
		d = &wireStopDetails{}
	}
	return p.errs.Refused(d.Explanation, d.Category)
}

// httpError reads (at most Limits.MaxErrorBodyBytes of) a non-2xx response and turns it into
// a *providers.Error. It does not close the body; the caller does.
func (p *Provider) httpError(resp *http.Response) *providers.Error {
	body, cut, readErr := wire.ReadError(resp.Body, p.limits.MaxErrorBodyBytes)
	e := p.envelopeError(resp.StatusCode, body)
	if e == nil {
		msg := wire.BodyMessage(resp.StatusCode, []byte(p.errs.Text(string(body))), resp.Header.Get("Content-Type"))
		e = &providers.Error{Kind: wire.Classify(resp.StatusCode, "", "", msg), Message: msg, Err: readErr}
	}
	if cut {
		e.Message += fmt.Sprintf(" (the error body is longer than Limits.MaxErrorBodyBytes, %d bytes; the rest was not read)",
			p.limits.MaxErrorBodyBytes)
	}
	e.StatusCode = resp.StatusCode
	e.RetryAfter = wire.RetryAfter(resp.Header)
	if id := wire.RequestID(resp.Header); id != "" {
		e.RequestID = id
	}
	e.RateLimit = providers.ParseRateLimit(resp.Header, time.Now())
	return p.errs.Finish(e)
}

// envelopeError parses body as an Anthropic error envelope and classifies it as if it came
// with status. It returns nil when body is not one.
func (p *Provider) envelopeError(status int, body []byte) *providers.Error {
	var env wireError
	if json.Unmarshal(body, &env) != nil || env.Error == nil || env.Error.Type == "" {
		return nil
	}
	typ, code, msg := env.Error.Type, env.Error.Details.ErrorCode, env.Error.Message
	return p.errs.Finish(&providers.Error{
		Kind:      classify(status, typ, code, msg),
		Type:      typ,
		Code:      code,
		Message:   msg,
		RequestID: env.RequestID,
	})
}

// streamError turns the data of an "error" event inside a 200 stream into a
// *providers.Error. The event has no status of its own, so it is classified with the status
// its type has outside a stream (overloaded_error as 529, rate_limit_error as 429…);
// StatusCode stays the 200 the stream was sent with.
func (p *Provider) streamError(data []byte, requestID string) *providers.Error {
	var env wireError
	_ = json.Unmarshal(data, &env)
	var e *providers.Error
	if env.Error != nil && env.Error.Type != "" {
		e = p.envelopeError(statusOf(env.Error.Type), data)
	} else {
		e = &providers.Error{Kind: providers.KindUnavailable,
			Message: "the stream sent an error event that is not an error envelope"}
	}
	e.StatusCode = http.StatusOK
	if requestID != "" {
		e.RequestID = requestID
	}
	return p.errs.Finish(e)
}

// notAnAnswer is the error for a 2xx body that holds no message: an error envelope is
// classified like the error it carries, anything else ({}, null, another object) is
// KindUnavailable.
func (p *Provider) notAnAnswer(resp *http.Response, body []byte) *providers.Error {
	e := p.envelopeError(http.StatusOK, body)
	if e != nil {
		var env wireError
		_ = json.Unmarshal(body, &env)
		e.Kind = classify(statusOf(env.Error.Type), e.Type, e.Code, e.Message)
		e.Message = "the server answered 2xx with an error: " + e.Message
	} else {
		e = &providers.Error{Kind: providers.KindUnavailable,
			Message: "the server answered " + http.StatusText(resp.StatusCode) + " without a message: " + wire.Describe(body)}
	}
	e.StatusCode = resp.StatusCode
	if id := wire.RequestID(resp.Header); id != "" {
		e.RequestID = id
	}
	e.RateLimit = providers.ParseRateLimit(resp.Header, time.Now())
	return p.errs.Finish(e)
}

// transportError wraps an error that came before or instead of a readable response: the
// caller's own cancellation is KindCanceled wherever it struck, the pipeline's rejections have
// their own kinds (wire.Errors.Transport).
func (p *Provider) transportError(ctx context.Context, err error) *providers.Error {
	return p.errs.Transport(ctx, err)
}

// classify is wire.Classify plus what it does not know of Anthropic: billing_error
// (402, an unpaid account) is a quota that waiting will not restore.
func classify(status int, errType, code, message string) providers.ErrorKind {
	if errType == "billing_error" {
		return providers.KindQuotaExhausted
	}
	return wire.Classify(status, errType, code, message)
}

// statusOf returns the HTTP status Anthropic gives an error type outside a stream.
func statusOf(errType string) int {
	switch errType {
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "billing_error":
		return http.StatusPaymentRequired
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	case "rate_limit_error":
		return http.StatusTooManyRequests
	case "timeout_error":
		return http.StatusGatewayTimeout
	case "overloaded_error":
		return 529
	}
	return http.StatusInternalServerError // api_error and anything new
}

// badRequest is the error for a request this package refuses before sending it.
func (p *Provider) badRequest(msg string) *providers.Error {
	return p.errs.New(providers.KindBadRequest, msg)
}
