// Package wire holds what steady's providers share about reading a server's answer safely:
// refusing redirects, reading bodies within the configured limits, and turning what a server
// sent into fields of a *providers.Error that are scrubbed of secrets and bounded in size.
// Every rule here treats the server as untrusted.
package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/steadyllm/steady/internal/redact"
	"github.com/steadyllm/steady/providers"
)

// Bounds of the text a server can put in an error.
const (
	maxMessage = 1000 // Error.Message
	maxField   = 128  // Error.Type, Code, RequestID and the like
)

// Sender sends a provider's requests over the *http.Client it was configured with, and never
// follows a redirect: it hands the 3xx back instead, for Redirect to turn into an error. Go's
// client would otherwise resend a 307/308 body, and it strips only Authorization and Cookie,
// only when the host name changes, never for another port: an x-api-key or api-key header
// would reach whoever the Location names.
//
// What an http.Client adds to its transport is, for these requests, only the redirect policy
// and, when configured, a cookie jar and a timeout. So when the client has neither jar nor
// timeout, Sender hands the request straight to the client's transport (the resilience
// pipeline, usually), skipping the copies of headers and URL that Client.Do makes on every
// call to follow redirects it will not follow. Otherwise it goes through a copy of the client
// whose CheckRedirect refuses them.
type Sender struct {
	rt     http.RoundTripper // the transport to call directly; nil: use client
	client *http.Client
}

// NewSender returns the Sender for hc (nil means http.DefaultClient), which is not modified.
func NewSender(hc *http.Client) Sender {
	if hc == nil {
		hc = http.DefaultClient
	}
	if hc.Jar == nil && hc.Timeout == 0 {
		rt := hc.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
		return Sender{rt: rt}
	}
	c := *hc
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return Sender{client: &c}
}

// Do sends req and returns the response, redirects included, as http.Client.Do does.
func (s Sender) Do(req *http.Request) (*http.Response, error) {
	if s.rt == nil {
		return s.client.Do(req)
	}
	resp, err := s.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp == nil {
		return nil, errors.New("the HTTP transport returned neither a response nor an error")
	}
	return resp, nil
}

// Errors makes the *providers.Error values of one provider: it knows the provider's name and
// its API key, and scrubs every field copied from a server.
type Errors struct {
	Provider string
	scrub    redact.Scrubber
}

// NewErrors returns the error maker of the provider named name, whose API key is key.
func NewErrors(name, key string) Errors {
	return Errors{Provider: name, scrub: redact.New(key)}
}

// Finish fills in the provider's name, the details its message states that its kind does not
// (a refused prefill's CodePrefillUnsupported, a context overflow's sizes: see markers.go), and
// scrubs and bounds every field of e that may hold text from a server, in place. It returns e.
// Finishing an error twice changes nothing more.
func (x Errors) Finish(e *providers.Error) *providers.Error {
	if e.Provider == "" {
		e.Provider = x.Provider
	}
	recognize(e)
	e.Message = x.scrub.Text(e.Message, maxMessage)
	e.Type = x.Field(e.Type)
	e.Code = x.Field(e.Code)
	e.RequestID = x.Field(e.RequestID)
	return e
}

// Field scrubs and bounds a short value a server sent (an ID, a model name, a code).
func (x Errors) Field(s string) string {
	if s == "" {
		return s
	}
	return x.scrub.Text(s, maxField)
}

// Text scrubs and bounds a message.
func (x Errors) Text(s string) string { return x.scrub.Text(s, maxMessage) }

// New returns a finished error of kind k with message msg.
func (x Errors) New(k providers.ErrorKind, msg string) *providers.Error {
	return x.Finish(&providers.Error{Kind: k, Message: msg})
}

// Redirect returns the error for a redirect response (a 3xx with a Location), or nil. It names
// the status and the origin pointed to, never a path or query. The caller closes the body.
func (x Errors) Redirect(resp *http.Response) *providers.Error {
	if resp.StatusCode < 300 || resp.StatusCode > 399 || resp.Header.Get("Location") == "" {
		return nil
	}
	to := "elsewhere"
	if u, err := url.Parse(resp.Header.Get("Location")); err == nil && u.Scheme != "" && u.Host != "" {
		to = "to " + u.Scheme + "://" + u.Host
	}
	return x.Finish(&providers.Error{
		Kind:       providers.KindRedirected,
		StatusCode: resp.StatusCode,
		Message: http.StatusText(resp.StatusCode) + ", a redirect " + to +
			": redirects are never followed, so the API key stays with the configured origin (check BaseURL)",
		RequestID: RequestID(resp.Header),
	})
}

// RequestID returns the provider's request ID header (x-request-id, request-id,
// apim-request-id), unscrubbed: Finish scrubs it with the rest of the error.
func RequestID(h http.Header) string {
	// The keys are in canonical form, so the map is indexed without Header.Get's work.
	for _, k := range [...]string{"X-Request-Id", "Request-Id", "Apim-Request-Id"} {
		if v := h[k]; len(v) > 0 && v[0] != "" {
			return v[0]
		}
	}
	return ""
}

// IsJSON reports whether h declares a JSON body (application/json or a +json type).
func IsJSON(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// Describe names what a body that is not an answer held, without repeating much of it:
// the body itself when short, else its size and first bytes. The result is not scrubbed;
// it goes into a message that Errors.Finish scrubs.
func Describe(body []byte) string {
	body = bytes.TrimSpace(body)
	switch {
	case len(body) == 0:
		return "an empty body"
	case len(body) <= 80:
		return string(body)
	}
	return fmt.Sprintf("%d bytes starting %s", len(body), redact.Clip(string(body), 60))
}

// Canceled is the error of a call whose caller's context ctx ended, wherever that struck:
// KindCanceled, matching ctx.Err() (context.Canceled or context.DeadlineExceeded) with
// errors.Is as well as err, what the call saw (a closed connection, a transport error). It
// is for a ctx that has ended and an err that is not yet a *providers.Error.
func (x Errors) Canceled(ctx context.Context, err error) *providers.Error {
	return x.Finish(providers.Classify(ctx, x.Provider, err))
}

// Transport turns an error that came before or instead of a response into a
// *providers.Error: Failure with nothing under way to name.
func (x Errors) Transport(ctx context.Context, err error) *providers.Error {
	return x.Failure(ctx, "", err)
}

// Failure turns an error that ended an exchange without an answer — before the response, or
// while its body or stream was being read — into a *providers.Error, by providers.Classify:
// the one place where such errors are classified, so that every wire reads the same kind for
// the same cause wherever it struck. during names what was under way ("reading the stream"),
// put before the message; "" for nothing.
func (x Errors) Failure(ctx context.Context, during string, err error) *providers.Error {
	var pe *providers.Error
	if errors.As(err, &pe) {
		return pe
	}
	e := providers.Classify(ctx, x.Provider, err)
	if during != "" && e.Kind != providers.KindCanceled {
		e.Message = during + ": " + e.Message
	}
	return x.Finish(e)
}

// ReadFailure is the error for a 2xx response resp whose body could not be read or decoded:
// the caller's cancellation, a dropped connection, the pipeline's timeout, a body past the
// limit, or something that is not JSON (Failure, with what naming what was under way), with
// the response's status and request ID.
func (x Errors) ReadFailure(ctx context.Context, resp *http.Response, what string, err error) *providers.Error {
	e := x.Failure(ctx, what, err)
	e.StatusCode = resp.StatusCode
	e.RequestID = RequestID(resp.Header)
	return x.Finish(e)
}

// Structured returns text as JSON when req asked for a structured answer (a Schema, or JSON
// mode) and text is valid JSON; nil otherwise.
func Structured(req *providers.ChatRequest, text string) json.RawMessage {
	if req == nil || (req.Schema == nil && req.Format != providers.FormatJSON) {
		return nil
	}
	b := bytes.TrimSpace([]byte(text))
	if len(b) == 0 || !json.Valid(b) {
		return nil
	}
	return json.RawMessage(b)
}

// HostOf returns the lower-cased host (without port) of the URL raw, "" when it has none.
func HostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}
