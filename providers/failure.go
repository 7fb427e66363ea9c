package providers

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/steadyllm/steady/internal/redact"
)

// maxFailureText bounds the message Classify copies from an error.
const maxFailureText = 1000

// Classify turns err, an error that ended an exchange with provider before or instead of an
// answer (a transport error, a rejection by the resilience pipeline), into an *Error. It is
// the one rule every wire and steady's client read such errors by, so that the same cause is
// the same kind wherever it struck:
//
//   - an error that already is an *Error is returned as it is;
//   - when the caller's context ctx has ended it is KindCanceled, whatever err says (a
//     pipeline timeout racing the caller's deadline never reads as the pipeline's), and
//     matches ctx.Err() with errors.Is as well as err;
//   - an error that names its kind (the resilience pipeline's: circuit open, bulkhead full,
//     timeout, redirect; see their ErrorKind methods) is of that kind, with its retry hint and
//     HTTP status;
//   - anything else is KindUnavailable.
//
// The message never repeats the request URL an http.Client's *url.Error carries, and is
// scrubbed of anything that looks like a credential and bounded.
func Classify(ctx context.Context, provider string, err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	if cause := ctx.Err(); cause != nil {
		var wrapped error = cause
		if err != nil && !errors.Is(err, cause) {
			wrapped = &canceled{cause: cause, seen: err}
		}
		return &Error{Provider: provider, Kind: KindCanceled, Message: cause.Error(), Err: wrapped}
	}
	e := &Error{Provider: provider, Kind: KindUnavailable, Err: err}
	if err == nil {
		e.Message = "no answer and no error"
		return e
	}
	e.Message = err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		e.Message = ue.Err.Error()
	}
	e.Message = redact.New().Text(e.Message, maxFailureText)
	var kinded interface{ ErrorKind() string }
	if errors.As(err, &kinded) {
		e.Kind = ErrorKind(kinded.ErrorKind())
	}
	var hinted interface{ RetryAfterHint() time.Duration }
	if errors.As(err, &hinted) {
		e.RetryAfter = hinted.RetryAfterHint()
	}
	var status interface{ HTTPStatus() int }
	if errors.As(err, &status) {
		e.StatusCode = status.HTTPStatus()
	}
	return e
}

// canceled joins the caller's cancellation with what the call saw of it.
type canceled struct{ cause, seen error }

func (e *canceled) Error() string   { return e.cause.Error() + " (" + e.seen.Error() + ")" }
func (e *canceled) Unwrap() []error { return []error{e.cause, e.seen} }
