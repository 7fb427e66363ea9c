package openai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/internal/wire"
)

// The Responses API's failures reach the classifier the chat completions' reach: an HTTP error
// carries the same {"error":{…}} envelope (read with the same code, fromAPIError), and a
// response that failed, or an error event inside a stream, is classified by the status its
// code stands for.

// responsesHTTPError reads (at most Limits.MaxErrorBodyBytes of) a non-2xx response and turns
// it into a *providers.Error. The caller closes the body.
func (p *Provider) responsesHTTPError(resp *http.Response) *providers.Error {
	body, cut, readErr := wire.ReadError(resp.Body, p.limits.MaxErrorBodyBytes)
	var e *providers.Error
	if a := apiEnvelope(body); a != nil {
		e = p.fromAPIError(a, resp.StatusCode)
		e.StatusCode = resp.StatusCode
		stateGone(e, a)
	} else {
		msg := wire.BodyMessage(resp.StatusCode, []byte(p.errs.Text(string(body))), resp.Header.Get("Content-Type"))
		e = &providers.Error{Kind: wire.Classify(resp.StatusCode, "", "", msg), Message: msg, Err: readErr}
	}
	if cut {
		e.Message += fmt.Sprintf(" (the error body is longer than Limits.MaxErrorBodyBytes, %d bytes; the rest was not read)",
			p.limits.MaxErrorBodyBytes)
	}
	e.StatusCode = resp.StatusCode
	e.RetryAfter = wire.RetryAfter(resp.Header)
	e.RequestID = wire.RequestID(resp.Header)
	e.RateLimit = providers.ParseRateLimit(resp.Header, time.Now())
	return p.errs.Finish(e)
}

// apiEnvelope parses body as OpenAI's error envelope, nil when it is not one.
func apiEnvelope(body []byte) *goopenai.APIError {
	var env struct {
		Error *goopenai.APIError `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil || env.Error == nil ||
		(env.Error.Message == "" && env.Error.Type == "" && env.Error.Code == nil) {
		return nil
	}
	return env.Error
}

// notAResponse is the error for a 2xx body that holds no response object: an error envelope
// is classified like the error it carries, anything else is KindUnavailable.
func (p *Provider) notAResponse(resp *http.Response, body []byte) *providers.Error {
	e := envelopeError(p.errs, body)
	if e == nil {
		e = &providers.Error{Kind: providers.KindUnavailable,
			Message: "the server answered " + http.StatusText(resp.StatusCode) + " without a response: " + wire.Describe(body)}
	}
	e.StatusCode = resp.StatusCode
	e.RequestID = wire.RequestID(resp.Header)
	e.RateLimit = providers.ParseRateLimit(resp.Header, time.Now())
	return p.errs.Finish(e)
}

// responseError classifies the error of a failed response or of an error event, as the HTTP
// error its code stands for would be (respStatus). The caller sets StatusCode and RequestID.
func (p *Provider) responseError(re *respError) *providers.Error {
	code, typ, msg := p.errs.Field(re.Code), p.errs.Field(re.Type), p.errs.Text(re.Message)
	if msg == "" {
		msg = "the response failed"
		if code != "" {
			msg += " (" + code + ")"
		}
	}
	return &providers.Error{Kind: wire.Classify(respStatus(typ, code), typ, code, msg), Type: typ, Code: code, Message: msg}
}

// respStatus returns the HTTP status a Responses error code stands for, as the API answers
// the same failure outside a response: the request's faults (invalid_prompt, the image codes,
// data_residency_mismatch, the policy codes) 400, vector_store_timeout 504, and the rest as
// for chat completions' error types (rate_limit_exceeded 429, server_error 500…).
func respStatus(typ, code string) int {
	c := strings.ToLower(code)
	switch {
	case strings.HasPrefix(c, "invalid_"), strings.Contains(c, "image"), strings.HasSuffix(c, "_policy"),
		strings.Contains(c, "policy_violation"), c == "data_residency_mismatch":
		return http.StatusBadRequest
	case c == "vector_store_timeout":
		return http.StatusGatewayTimeout
	}
	return inferStatus(typ, code)
}

// stateGone marks e, the error a request met, when the server says it does not find the stored
// state the request named — previous_response_id (CodeResponseGone) or conversation
// (CodeConversationGone) — with a 404, or a 400 whose message says "not found", as OpenAI
// answers an unknown previous_response_id.
func stateGone(e *providers.Error, a *goopenai.APIError) {
	if a.Param == nil || (e.StatusCode != http.StatusNotFound &&
		(e.StatusCode != http.StatusBadRequest || !strings.Contains(strings.ToLower(a.Message), "not found"))) {
		return
	}
	switch *a.Param {
	case "previous_response_id":
		e.Code = providers.CodeResponseGone
	case "conversation", "conversation.id":
		e.Code = providers.CodeConversationGone
	}
}

// storedGone marks e, the failure of an exchange that named the stored answer id (a read, a
// cancel, the resume of a cut stream), as the answer being gone (CodeResponseGone) when the
// server answered 404: it gave the ID itself, so a 404 says it holds the answer no more.
// what says what the caller loses; "" for nothing more.
func (p *Provider) storedGone(e *providers.Error, id, what string) *providers.Error {
	if e.StatusCode != http.StatusNotFound {
		return e
	}
	e.Code = providers.CodeResponseGone
	msg := "the stored answer " + p.errs.Field(id) + " is gone: the server no longer holds it " +
		"(its retention ended, it was deleted, or it was stored under another API key or project)"
	if what != "" {
		msg += "; " + what
	}
	if e.Message != "" {
		msg += " — the server said: " + e.Message
	}
	e.Message = msg
	return p.errs.Finish(e)
}
