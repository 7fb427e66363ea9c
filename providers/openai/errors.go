package openai

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/steadyllm/steady/providers"
)

// toError turns any failure of a go-openai call into a *providers.Error. x is the call's
// exchange: it says whether a request went out and holds the response headers, which
// go-openai does not hand back on error paths.
func (p *Provider) toError(x *exchange, err error) *providers.Error {
	var (
		e      *providers.Error
		reqErr *goopenai.RequestError
		apiErr *goopenai.APIError
	)
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &reqErr):
		e = p.fromRequestError(reqErr, x.header)
	case errors.As(err, &apiErr):
		e = p.fromAPIError(apiErr, apiErr.HTTPStatusCode)
	case !x.sent:
		// go-openai refused the request before sending it: a model it will not use for chat,
		// parameters its ReasoningValidator rejects, a body it cannot encode.
		e = &providers.Error{Provider: p.name, Kind: providers.KindBadRequest, Message: err.Error(), Err: err}
	case x.status != 0:
		// A 2xx whose body could not be read or decoded: a dropped connection or a server
		// that sent something other than JSON. The next attempt may well succeed.
		e = providers.TransportError(p.name, err)
		e.StatusCode = x.status
		if e.Kind == providers.KindUnavailable {
			e.Message = "reading the response: " + err.Error()
		}
	default:
		e = providers.TransportError(p.name, err)
	}
	if x.header != nil {
		e.RetryAfter = providers.RetryAfter(x.header)
		e.RequestID = providers.RequestID(x.header)
	}
	e.Message = p.scrub(e.Message)
	return e
}

// fromAPIError maps an OpenAI error envelope. status is the HTTP status, or for an error
// inside a 200 stream (which go-openai returns without one) a status inferred from the
// error's type.
func (p *Provider) fromAPIError(a *goopenai.APIError, status int) *providers.Error {
	a.Message = p.scrub(a.Message) // a is this call's own value: scrub it for Unwrap too
	code := codeString(a.Code)
	classifyCode := code
	if a.InnerError != nil && a.InnerError.Code != "" {
		classifyCode += " " + a.InnerError.Code // Azure: ResponsibleAIPolicyViolation
	}
	return &providers.Error{
		Provider:   p.name,
		Kind:       providers.Classify(status, a.Type, classifyCode, a.Message),
		StatusCode: a.HTTPStatusCode,
		Type:       a.Type,
		Code:       code,
		Message:    a.Message,
		Err:        a,
	}
}

// fromRequestError maps a non-2xx response whose body is not an OpenAI error envelope: a
// gateway's HTML page, plain text, an empty body. The body never becomes the message as is:
// HTML is replaced by the status text, other text is cut to one short line.
func (p *Provider) fromRequestError(r *goopenai.RequestError, h http.Header) *providers.Error {
	if p.apiKey != "" {
		r.Body = bytes.ReplaceAll(r.Body, []byte(p.apiKey), []byte("[REDACTED]"))
	}
	var typ, code, msg string
	var inner *goopenai.APIError
	if errors.As(r.Err, &inner) { // a partly valid envelope
		inner.Message = p.scrub(inner.Message)
		typ, code, msg = inner.Type, codeString(inner.Code), inner.Message
	}
	if msg == "" {
		msg = providers.BodyMessage(r.HTTPStatusCode, r.Body, h.Get("Content-Type"))
	}
	return &providers.Error{
		Provider:   p.name,
		Kind:       providers.Classify(r.HTTPStatusCode, typ, code, msg),
		StatusCode: r.HTTPStatusCode,
		Type:       typ,
		Code:       code,
		Message:    msg,
		Err:        r,
	}
}

// streamError maps an error event inside a 200 stream ("data: {"error":…}"). go-openai
// gives it no HTTP status, so one is inferred from the error's type for classification;
// StatusCode stays the 200 the stream was sent with.
func (p *Provider) streamError(a *goopenai.APIError, x *exchange) *providers.Error {
	e := p.fromAPIError(a, inferStatus(a.Type, codeString(a.Code)))
	e.StatusCode = x.status
	if x.header != nil {
		e.RequestID = providers.RequestID(x.header)
	}
	e.Message = p.scrub(e.Message)
	return e
}

// inferStatus guesses the HTTP status an error type would have had outside a stream.
func inferStatus(errType, code string) int {
	t := strings.ToLower(errType + " " + code)
	switch {
	case strings.Contains(t, "insufficient_quota"), strings.Contains(t, "rate_limit"), errType == "requests":
		return http.StatusTooManyRequests
	case strings.Contains(t, "invalid_request"):
		return http.StatusBadRequest
	case strings.Contains(t, "authentication"), strings.Contains(t, "invalid_api_key"):
		return http.StatusUnauthorized
	case strings.Contains(t, "permission"):
		return http.StatusForbidden
	case strings.Contains(t, "timeout"):
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// codeString renders an APIError code, which may be a string, a number or absent.
func codeString(code any) string {
	switch c := code.(type) {
	case nil:
		return ""
	case string:
		return c
	default:
		return fmt.Sprint(c)
	}
}

// scrub removes the API key from a message, in case a server echoes it back.
func (p *Provider) scrub(msg string) string {
	return providers.Redact(msg, p.apiKey)
}
