package anthropic

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/steadyllm/steady/providers"
)

// errorBodyLimit bounds how much of an error response is read: Anthropic's error envelopes
// are a few hundred bytes, a gateway's HTML page a few kilobytes.
const errorBodyLimit = 64 << 10

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

// httpError reads (at most errorBodyLimit bytes of) a non-2xx response and turns it into a
// *providers.Error. It does not close the body; the caller does.
func (p *Provider) httpError(resp *http.Response) *providers.Error {
	body, readErr := io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit))
	e := p.envelopeError(resp.StatusCode, body)
	if e == nil {
		msg := providers.BodyMessage(resp.StatusCode, body, resp.Header.Get("Content-Type"))
		e = &providers.Error{Provider: p.name, Kind: providers.Classify(resp.StatusCode, "", "", msg), Message: msg}
		if readErr != nil {
			e.Err = readErr
		}
	}
	e.StatusCode = resp.StatusCode
	e.RetryAfter = providers.RetryAfter(resp.Header)
	if id := providers.RequestID(resp.Header); id != "" {
		e.RequestID = id
	}
	e.Message = p.scrub(e.Message)
	return e
}

// envelopeError parses body as an Anthropic error envelope and classifies it as if it came
// with status. It returns nil when body is not one.
func (p *Provider) envelopeError(status int, body []byte) *providers.Error {
	var env wireError
	if json.Unmarshal(body, &env) != nil || env.Error == nil || env.Error.Type == "" {
		return nil
	}
	typ, code, msg := env.Error.Type, env.Error.Details.ErrorCode, p.scrub(env.Error.Message)
	return &providers.Error{
		Provider:  p.name,
		Kind:      classify(status, typ, code, msg),
		Type:      typ,
		Code:      code,
		Message:   msg,
		RequestID: env.RequestID,
	}
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
		e = &providers.Error{Provider: p.name, Kind: providers.KindUnavailable,
			Message: "the stream sent an error event that is not an error envelope"}
	}
	e.StatusCode = http.StatusOK
	if requestID != "" {
		e.RequestID = requestID
	}
	return e
}

// classify is providers.Classify plus what it does not know of Anthropic: billing_error
// (402, an unpaid account) is a quota that waiting will not restore.
func classify(status int, errType, code, message string) providers.ErrorKind {
	if errType == "billing_error" {
		return providers.KindQuotaExhausted
	}
	return providers.Classify(status, errType, code, message)
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
	return &providers.Error{Provider: p.name, Kind: providers.KindBadRequest, Message: msg}
}

// scrub removes the API key from a message, in case a server echoes it back.
func (p *Provider) scrub(msg string) string {
	return providers.Redact(msg, p.apiKey)
}
