package resilience

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// The official OpenAI and Anthropic SDKs for Go (openai-go, anthropic-sdk-go, both generated
// by Stainless) retry every error their transport returns as a connection error: over the
// pipeline, with their default of two retries and their own backoff, an open circuit's
// instant rejection becomes more than a second of waiting, and a full bulkhead or a timeout
// is retried against the very limit that refused it. They do not retry an answer that
// carries x-should-retry: false.
//
// So for a request that comes from one of them (it carries their X-Stainless-* headers) the
// pipeline answers its own failures — a rejection by the circuit or the bulkhead, its own
// timeout, a refused redirect, a network failure its retries could not cure — with a
// synthetic error response instead of an error: x-should-retry: false, a status that says
// what happened (503, 504, 502), and a JSON body in the error shape both SDKs read
// ({"type":"error","error":{"type","code","message"}}). Rejection recovers the pipeline's
// error from that response. The caller's own cancellation stays an error.

// stainless reports whether req comes from a Stainless-generated SDK.
func stainless(req *http.Request) bool {
	for k := range req.Header {
		if strings.HasPrefix(k, "X-Stainless-") {
			return true
		}
	}
	return false
}

type rejectionKey struct{}

// Rejection returns the pipeline's error behind a synthetic response it gave an official SDK
// in place of that error (see above), or nil when resp is not one. With openai-go, for
// instance: var apiErr *openai.Error; errors.As(err, &apiErr); resilience.Rejection(apiErr.Response)
// matches ErrCircuitOpen with errors.Is when the circuit turned the call away.
func Rejection(resp *http.Response) error {
	if resp == nil || resp.Request == nil {
		return nil
	}
	err, _ := resp.Request.Context().Value(rejectionKey{}).(error)
	return err
}

// answerForSDK turns err, the pipeline's failure of req, into a synthetic response when req
// comes from a Stainless SDK; it returns nil otherwise.
func answerForSDK(req *http.Request, err error) *http.Response {
	if !stainless(req) || req.Context().Err() != nil {
		return nil
	}
	status, code := http.StatusBadGateway, "connection_error"
	h := http.Header{"Content-Type": {"application/json"}, "X-Should-Retry": {"false"}}
	var coe *CircuitOpenError
	switch {
	case errors.As(err, &coe):
		status, code = http.StatusServiceUnavailable, "circuit_open"
		if coe.RetryAfter > 0 {
			h.Set("Retry-After-Ms", strconv.FormatInt(coe.RetryAfter.Milliseconds(), 10))
		}
	case errors.Is(err, ErrBulkheadRejected):
		status, code = http.StatusServiceUnavailable, "bulkhead_full"
		var be *BulkheadRejectedError
		if errors.As(err, &be) && be.RetryAfter > 0 {
			h.Set("Retry-After-Ms", strconv.FormatInt(max(be.RetryAfter.Milliseconds(), 1), 10))
		}
	case errors.Is(err, ErrTimeout):
		status, code = http.StatusGatewayTimeout, "timeout"
	case errors.Is(err, ErrRedirect):
		code = "redirect_refused"
	}
	h.Set("X-Steady-Rejection", code)
	var body struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	body.Type, body.Error.Type, body.Error.Code, body.Error.Message = "error", code, code, err.Error()
	data, _ := json.Marshal(body)
	return &http.Response{
		Status:        strconv.Itoa(status) + " " + http.StatusText(status),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(data)),
		ContentLength: int64(len(data)),
		Request:       req.WithContext(context.WithValue(req.Context(), rejectionKey{}, err)),
	}
}
