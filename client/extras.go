package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/steadyllm/steady/providers"
)

// The HTTP changes a call carries — its headers, its own request ID, extra body fields — travel
// in its context (callExtras) to the transport below each provider (extrasTransport), which
// applies them to every attempt and every fallback.

// RequestIDHeader is the request header that carries a call's own ID (WithRequestID) on every
// attempt to every provider of the chain. OpenAI reads it as the client's ID for the request
// and echoes it in its logs; gateways and proxies can correlate on it.
const RequestIDHeader = "X-Client-Request-Id"

// sendsExtras reports whether the call changes the HTTP requests (headers, request ID, fields).
func (o *callOptions) sendsExtras() bool {
	return o != nil && (o.header != nil || o.fields != nil || o.requestID != "")
}

// callExtras carries the HTTP changes of a call to the client's transport, under its key in
// the call's context.
type callExtras struct {
	context.Context
	o *callOptions
}

type extrasKey struct{}

func (x *callExtras) Value(key any) any {
	if _, ok := key.(extrasKey); ok {
		return x
	}
	return x.Context.Value(key)
}

// extrasTransport applies the HTTP changes of a call (headers, request ID, body fields) to
// each request of provider name, whose GenAI system is system, before its pipeline: every
// attempt and every fallback sends them.
type extrasTransport struct {
	name   string
	system string // the provider's GenAI system, set by New once the provider is built
	next   http.RoundTripper
	// headersOnly leaves the body as it is: a token count's request (count.go), whose
	// endpoint refuses what only shapes an answer.
	headersOnly bool
}

// authHeaders are the headers a call's options may not set: each provider's credentials.
var authHeaders = []string{"Authorization", "X-Api-Key", "Api-Key"}

func (t *extrasTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	x, _ := req.Context().Value(extrasKey{}).(*callExtras)
	if x == nil {
		return t.next.RoundTrip(req)
	}
	o := x.o
	fields := o.fields[t.name]
	if sys := o.fields[t.system]; t.system != "" && len(sys) > 0 {
		// The system's fields, then the provider's own over them: the name wins.
		merged := make(map[string]any, len(sys)+len(fields))
		for k, v := range sys {
			merged[k] = v
		}
		for k, v := range fields {
			merged[k] = v
		}
		fields = merged
	}
	r := req.Clone(req.Context())
	for k, vs := range o.header {
		if slices.Contains(authHeaders, http.CanonicalHeaderKey(k)) {
			continue
		}
		r.Header[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
	if o.requestID != "" {
		r.Header.Set(RequestIDHeader, o.requestID)
	}
	if len(fields) > 0 && !t.headersOnly && req.Body != nil && req.Body != http.NoBody {
		body, err := mergeFields(req, fields)
		if err != nil {
			return nil, &providers.Error{Provider: t.name, Kind: providers.KindBadRequest,
				Message: "WithExtraFields: " + err.Error(), Err: err}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		r.ContentLength = int64(len(body))
	}
	return t.next.RoundTrip(r)
}

// mergeFields reads req's JSON object body (closing it) and returns it with fields set.
func mergeFields(req *http.Request, fields map[string]any) ([]byte, error) {
	raw, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("the provider's request body is not a JSON object: %w", err)
	}
	for k, v := range fields {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
		obj[k] = b
	}
	return json.Marshal(obj)
}
