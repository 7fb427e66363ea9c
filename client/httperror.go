package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/providers"
)

// Answering a service's own caller: the HTTP status and Retry-After a failed call of the
// client becomes in the service's handler (HTTPStatus), and the answer itself (WriteError).

// StatusClientClosedRequest is the status HTTPStatus gives a call the caller canceled, 499.
// It is in no HTTP registry: nginx logs it for a client that closed its connection before the
// answer, and grpc-gateway gives it to a canceled call, so logs and dashboards already read it
// as the caller's own doing — neither the service's failure (a 5xx would count against its
// availability) nor a request it refused (a 4xx of the standard says what was wrong with it).
// Nobody reads the answer; the status is for the service's own logs.
const StatusClientClosedRequest = 499

// MaxRetryAfter bounds the wait HTTPStatus advises, as deferral.MaxDelay bounds a job's: a
// day. A budget whose window ends later (a month's) is asked again after a day, and says how
// long it still has.
const MaxRetryAfter = deferral.MaxDelay

// HTTPStatus returns the HTTP status with which a service answers its own caller when a call
// of the client failed with err, and how long the caller should wait before trying again (0:
// no advice; never more than MaxRetryAfter). It judges the error by its kind:
//
//	kind                          status  wait (Retry-After)
//	rate_limited                  429     the server's hint (RetryAfter), when it sent one
//	budget_exhausted              429     the time until the budget's window ends
//	overloaded, unavailable       503     the server's hint, when it sent one
//	circuit_open                  503     the time until the circuit's next probe
//	bulkhead_full                 503     when known
//	quota_exhausted               503     none
//	timeout                       504     when known
//	stream_truncated              502     when known
//	auth, not_found, redirected   502     none
//	bad_request, context_too_long 400     none
//	content_filtered, refused     422     none
//	canceled                      499     none (StatusClientClosedRequest)
//	unknown, or no kind           500     none
//
// 429 says the caller (or its tenant's budget) should slow down and ask again after the wait;
// 503, that the service cannot serve for now. A spent quota is the service's account with its
// provider, which no wait restores: 503 without a wait. A refused key, a model the provider
// does not serve and a redirect are the service's own configuration, not the caller's fault,
// and only an operator mends them: 502, the upstream's answer failed the call. A request the
// provider refused as malformed or too long is the caller's to change (400); one it understood
// and would not answer, the caller's too (422). A service whose requests are its own, not its
// caller's, may prefer 500 for these: it can test the kind first (providers.KindOf) and call
// HTTPStatus for the rest.
//
// Only a kind that may pass (providers.ErrorKind.Temporary) advises a wait. A *ChainError
// answers as its Cause (which errors.As finds first); its wait is the earliest at which any
// provider of the chain may serve again: the shortest hint among its failures that may pass,
// none when one of them gave none. A *deferral.Error answers as the failure it wraps, and its
// wait is its Decision's (Decision.Wait, none when the decision is not to retry). An error that
// names its kind without being a *providers.Error (the resilience pipeline's rejections: see
// providers.Classify) is judged by that kind and its hint; context.Canceled is a cancellation
// and context.DeadlineExceeded a timeout. Any other error is the service's own: 500. A nil err
// is no failure: 200.
func HTTPStatus(err error) (status int, retryAfter time.Duration) {
	status, retryAfter = httpStatus(err)
	return status, min(max(retryAfter, 0), MaxRetryAfter)
}

// httpStatus is HTTPStatus, its wait not yet bounded.
func httpStatus(err error) (int, time.Duration) {
	if err == nil {
		return http.StatusOK, 0
	}
	var de *deferral.Error
	if errors.As(err, &de) {
		status := http.StatusInternalServerError // a decision about no failure: made by hand
		if de.Err != nil {
			status, _ = httpStatus(de.Err)
		}
		return status, de.Decision.Wait(time.Now())
	}
	var pe *providers.Error
	if !errors.As(err, &pe) {
		return otherStatus(err)
	}
	status := kindStatus(pe.Kind)
	if !pe.Kind.Temporary() {
		return status, 0
	}
	var ce *ChainError
	if !errors.As(err, &ce) || ce.Cause != pe {
		return status, pe.RetryAfter
	}
	return status, ce.earliest()
}

// earliest is the wait after which some provider of the chain may serve again (see
// HTTPStatus): the shortest hint of the failures that may pass, 0 when one gave none.
func (e *ChainError) earliest() time.Duration {
	wait := e.Cause.RetryAfter
	for _, f := range e.Failures {
		if f.Temporary() {
			if f.RetryAfter <= 0 {
				return 0
			}
			wait = min(wait, f.RetryAfter)
		}
	}
	return wait
}

// otherStatus judges an error that holds no *providers.Error.
func otherStatus(err error) (int, time.Duration) {
	var kinded interface{ ErrorKind() string }
	switch {
	case errors.As(err, &kinded):
		k := providers.ErrorKind(kinded.ErrorKind())
		var hinted interface{ RetryAfterHint() time.Duration }
		if k.Temporary() && errors.As(err, &hinted) {
			return kindStatus(k), hinted.RetryAfterHint()
		}
		return kindStatus(k), 0
	case errors.Is(err, context.Canceled):
		return StatusClientClosedRequest, 0
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, 0
	}
	return http.StatusInternalServerError, 0
}

// kindStatus is the status of a failure of kind k (see HTTPStatus): 500 for a kind the table
// does not hold.
func kindStatus(k providers.ErrorKind) int {
	if a, ok := kindAnswers[k]; ok {
		return a.status
	}
	return http.StatusInternalServerError
}

// kindAnswers is, for every kind, the status HTTPStatus gives it and WriteError's words for it:
// what the caller may know, nothing of the service's providers, models or account.
var kindAnswers = map[providers.ErrorKind]struct {
	status  int
	message string
}{
	providers.KindRateLimited:     {http.StatusTooManyRequests, "the language model is rate limiting this service: try again later"},
	providers.KindBudgetExhausted: {http.StatusTooManyRequests, "the spending budget for these requests is used up until its window ends"},
	providers.KindOverloaded:      {http.StatusServiceUnavailable, "the language model is overloaded: try again later"},
	providers.KindUnavailable:     {http.StatusServiceUnavailable, "the language model is unavailable: try again later"},
	providers.KindCircuitOpen:     {http.StatusServiceUnavailable, "the language model is failing: requests are paused until it recovers"},
	providers.KindBulkheadFull:    {http.StatusServiceUnavailable, "too many requests are in progress: try again later"},
	providers.KindQuotaExhausted:  {http.StatusServiceUnavailable, "this service's quota with its language model provider is used up"},
	providers.KindTimeout:         {http.StatusGatewayTimeout, "the language model did not answer in time"},
	providers.KindStreamTruncated: {http.StatusBadGateway, "the language model's answer was cut short"},
	providers.KindAuth:            {http.StatusBadGateway, misconfigured},
	providers.KindNotFound:        {http.StatusBadGateway, misconfigured},
	providers.KindRedirected:      {http.StatusBadGateway, misconfigured},
	providers.KindBadRequest:      {http.StatusBadRequest, "the language model refused the request as invalid"},
	providers.KindContextTooLong:  {http.StatusBadRequest, "the request is too long for the language model's context window"},
	providers.KindContentFiltered: {http.StatusUnprocessableEntity, "a content filter blocked the request or the answer"},
	providers.KindRefused:         {http.StatusUnprocessableEntity, "the language model declined to answer"},
	providers.KindCanceled:        {StatusClientClosedRequest, "the request was canceled"},
	providers.KindUnknown:         {http.StatusInternalServerError, internalError},
}

// The words of WriteError shared by several kinds.
const (
	misconfigured = "this service cannot use its language model: a problem of its configuration"
	internalError = "internal error"
)

// WriteError answers a service's caller for a call that failed with err: the status of
// HTTPStatus, a Retry-After header when it advises a wait (whole seconds, rounded up, at most
// MaxRetryAfter), and a small JSON body,
//
//	{"error": {"kind": "rate_limited", "message": "the language model is rate limiting this service: try again later"}}
//
// whose kind is the error's (providers.KindOf; "unknown" for an error that has none) and whose
// message is steady's own words for that kind — never the provider's message, which may name
// the service's models, deployments or account (it stays in the service's logs, and the
// error's text), never a key or a URL. A context_too_long says by how much, when the server
// said. The answer is not cached (Cache-Control: no-store).
//
// Call it before anything of the answer was written: a stream that failed after its first
// bytes has sent its status already. A nil err writes nothing: there is no failure to answer.
func WriteError(w http.ResponseWriter, err error) {
	if err == nil {
		return
	}
	status, wait := HTTPStatus(err)
	kind := providers.KindOf(err)
	if _, known := kindAnswers[kind]; !known || kind == providers.KindUnknown {
		kind = otherKind(err)
	}
	var body struct {
		Error struct {
			Kind    providers.ErrorKind `json:"kind"`
			Message string              `json:"message"`
		} `json:"error"`
	}
	body.Error.Kind, body.Error.Message = kind, messageFor(kind, err)
	data, _ := json.Marshal(body) // two strings: cannot fail
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if wait > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64((wait+time.Second-1)/time.Second), 10))
	}
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}

// otherKind is the kind WriteError reports for an error that holds no *providers.Error.
func otherKind(err error) providers.ErrorKind {
	var kinded interface{ ErrorKind() string }
	switch {
	case errors.As(err, &kinded):
		if k := providers.ErrorKind(kinded.ErrorKind()); kindStatus(k) != http.StatusInternalServerError {
			return k
		}
	case errors.Is(err, context.Canceled):
		return providers.KindCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return providers.KindTimeout
	}
	return providers.KindUnknown
}

// messageFor is WriteError's message for a failure of kind k, err.
func messageFor(k providers.ErrorKind, err error) string {
	a, ok := kindAnswers[k]
	if !ok {
		return internalError
	}
	msg := a.message
	var pe *providers.Error
	if k == providers.KindContextTooLong && errors.As(err, &pe) && pe.Overflow != nil && pe.Overflow.Window > 0 {
		o := pe.Overflow
		if o.Requested > 0 {
			return fmt.Sprintf("%s: it needs %d tokens, the window holds %d", msg, o.Requested, o.Window)
		}
		return fmt.Sprintf("%s of %d tokens", msg, o.Window)
	}
	return msg
}
