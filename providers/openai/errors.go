package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/internal/wire"
)

// toError turns any failure of a go-openai call into a *providers.Error. x is the call's
// exchange: it says whether a request went out and holds the response headers, which
// go-openai does not hand back on error paths. Every field copied from the server is scrubbed
// of the API key and bounded (wire.Errors.Finish).
func (p *Provider) toError(ctx context.Context, x *exchange, err error) *providers.Error {
	var (
		e      *providers.Error
		reqErr *goopenai.RequestError
		apiErr *goopenai.APIError
	)
	broke := x.readErr()
	switch {
	case errors.As(err, &e):
		return e
	case broke != nil:
		// The body of a 2xx broke under go-openai's decoder: classify what the body failed
		// with (the pipeline's timeout, the caller's cancellation, a dropped connection), not
		// what go-openai made of it.
		e = p.errs.Failure(ctx, "reading the response", broke)
	case ctx.Err() != nil:
		// The caller's own deadline or cancellation, wherever it struck.
		e = p.errs.Canceled(ctx, err)
	case errors.As(err, &reqErr):
		e = p.fromRequestError(reqErr, x)
	case errors.As(err, &apiErr):
		e = p.fromAPIError(apiErr, apiErr.HTTPStatusCode)
	case !x.sent:
		// go-openai refused the request before sending it: a model it will not use for chat,
		// parameters its ReasoningValidator rejects, a body it cannot encode.
		e = &providers.Error{Kind: providers.KindBadRequest, Message: err.Error(), Err: err}
	case x.status != 0:
		// A 2xx whose body could not be decoded: a body past the size limit, or a server that
		// sent something other than JSON.
		e = p.errs.Failure(ctx, "reading the response", err)
	default:
		return p.errs.Transport(ctx, err) // the pipeline's rejections map to their own kinds here
	}
	if x.status != 0 && e.StatusCode == 0 {
		e.StatusCode = x.status
	}
	if x.header != nil {
		e.RetryAfter = wire.RetryAfter(x.header)
		e.RequestID = wire.RequestID(x.header)
		e.RateLimit = providers.ParseRateLimit(x.header, time.Now())
	}
	return p.errs.Finish(e)
}

// fromAPIError maps an OpenAI error envelope. status is the HTTP status, or for an error
// without one (inside a 200 stream or a 200 body) a status inferred from the error's type.
// The APIError is this call's own value: it is scrubbed in place, so that the cause found with
// errors.As holds no secret either.
func (p *Provider) fromAPIError(a *goopenai.APIError, status int) *providers.Error {
	p.scrubAPIError(a)
	code := codeString(a.Code)
	classifyCode := code
	if a.InnerError != nil && a.InnerError.Code != "" {
		classifyCode += " " + a.InnerError.Code // Azure: ResponsibleAIPolicyViolation
	}
	return &providers.Error{
		Kind:       wire.Classify(status, a.Type, classifyCode, a.Message),
		StatusCode: a.HTTPStatusCode,
		Type:       a.Type,
		Code:       code,
		Message:    a.Message,
		Err:        a,
	}
}

// scrubAPIError removes the API key from every text field of a.
func (p *Provider) scrubAPIError(a *goopenai.APIError) {
	a.Message = p.errs.Text(a.Message)
	a.Type = p.errs.Field(a.Type)
	if s, ok := a.Code.(string); ok {
		a.Code = p.errs.Field(s)
	}
	if a.Param != nil {
		param := p.errs.Field(*a.Param)
		a.Param = &param
	}
	if a.InnerError != nil {
		a.InnerError.Code = p.errs.Field(a.InnerError.Code)
	}
}

// fromRequestError maps a non-2xx response whose body is not an OpenAI error envelope: a
// gateway's HTML page, plain text, an empty body. The body never becomes the message as is:
// HTML is replaced by the status text, other text is cut to one short line.
func (p *Provider) fromRequestError(r *goopenai.RequestError, x *exchange) *providers.Error {
	r.Body = []byte(p.errs.Text(string(r.Body))) // scrubbed before any of it is shown
	var typ, code, msg string
	var inner *goopenai.APIError
	if errors.As(r.Err, &inner) { // a partly valid envelope
		p.scrubAPIError(inner)
		typ, code, msg = inner.Type, codeString(inner.Code), inner.Message
	}
	if msg == "" {
		msg = wire.BodyMessage(r.HTTPStatusCode, r.Body, x.header.Get("Content-Type"))
	}
	if x.cut {
		msg += fmt.Sprintf(" (the error body is longer than Limits.MaxErrorBodyBytes, %d bytes; the rest was not read)",
			p.limits.MaxErrorBodyBytes)
	}
	return &providers.Error{
		Kind:       wire.Classify(r.HTTPStatusCode, typ, code, msg),
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
		e.RequestID = wire.RequestID(x.header)
	}
	return p.errs.Finish(e)
}

// envelopeError parses body as an OpenAI error envelope ({"error":{…}}) that came with a 2xx
// status, and classifies it like the error it carries. It returns nil when body is not one.
func envelopeError(errs wire.Errors, body []byte) *providers.Error {
	var env struct {
		Error *goopenai.APIError `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil || env.Error == nil ||
		(env.Error.Message == "" && env.Error.Type == "" && env.Error.Code == nil) {
		return nil
	}
	a := env.Error
	p := &Provider{errs: errs}
	e := p.fromAPIError(a, inferStatus(a.Type, codeString(a.Code)))
	e.Message = "the server answered 2xx with an error: " + e.Message
	return errs.Finish(e)
}

// noAnswer is the error for a 2xx JSON body that go-openai decoded without finding an answer
// in it ({}, null, an error envelope, another object).
func (p *Provider) noAnswer(x *exchange, what string) *providers.Error {
	var head []byte
	if x.body != nil && x.body.Complete() {
		head = x.body.Head()
	}
	e := envelopeError(p.errs, head)
	if e == nil {
		e = &providers.Error{Kind: providers.KindUnavailable,
			Message: "the server answered " + http.StatusText(x.status) + " without an answer (" + what + "): " + wire.Describe(head)}
	}
	e.StatusCode = x.status
	if x.header != nil {
		e.RequestID = wire.RequestID(x.header)
		e.RateLimit = providers.ParseRateLimit(x.header, time.Now())
	}
	return p.errs.Finish(e)
}

// inferStatus guesses the HTTP status an error type would have had outside a stream.
func inferStatus(errType, code string) int {
	t := strings.ToLower(errType + " " + code)
	switch {
	case strings.Contains(t, "insufficient_quota"), strings.Contains(t, "rate_limit"), errType == "requests":
		return http.StatusTooManyRequests
	case strings.Contains(t, "authentication"), strings.Contains(t, "invalid_api_key"):
		return http.StatusUnauthorized
	case strings.Contains(t, "permission"):
		return http.StatusForbidden
	case strings.Contains(t, "invalid_request"):
		return http.StatusBadRequest
	case strings.Contains(t, "timeout"):
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// codeString renders an APIError code, which may be a string, a number or absent. go-openai
// decodes "code": null as the number 0, which no API uses: it is absent too.
func codeString(code any) string {
	switch c := code.(type) {
	case nil:
		return ""
	case string:
		return c
	case int:
		if c == 0 {
			return ""
		}
	}
	return fmt.Sprint(code)
}
