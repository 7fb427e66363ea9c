package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// A call's failure: what one try failed with, completed with what only the client knows
// (classify), and what a call that found no answer returns (chainError, ChainError).

// classify completes the failure of one provider's try with what only the client knows: the
// number of attempts and why the pipeline gave up. Providers map the errors they see (the
// pipeline's rejections included) to *providers.Error where they first see them; an error a
// provider returned as it got it is mapped here the same way (providers.Classify). When the
// call's whole-call deadline caused the failure (it ran out, or a wait would have passed it)
// the failure is KindTimeout with GaveUp "deadline" (see deadline.go). Otherwise, when the
// caller's context ctx has ended the failure is KindCanceled whatever it looks like: the
// caller gave up, and neither the provider nor the pipeline is to blame.
func classify(ctx context.Context, provider string, err error, info *resilience.CallInfo) *providers.Error {
	var pe *providers.Error
	if errors.As(err, &pe) {
		cp := *pe
		pe = &cp
	} else {
		pe = providers.Classify(ctx, provider, err)
	}
	if pe.Provider == "" {
		pe.Provider = provider
	}
	if x, _ := ctx.Value(extrasKey{}).(*callExtras); x != nil {
		pe.ClientRequestID = x.o.requestID
	}
	byDeadline := false
	if d := deadlineOf(ctx); d != nil {
		var wait time.Duration
		if wait, byDeadline = d.explains(err, info); byDeadline {
			d.verdict(pe, wait)
		}
	}
	if !byDeadline && ctx.Err() != nil && pe.Kind != providers.KindCanceled {
		pe.Kind = providers.KindCanceled
		if !errors.Is(pe.Err, ctx.Err()) {
			pe.Err = errors.Join(ctx.Err(), pe.Err)
		}
	}
	if info != nil {
		if pe.Attempts == 0 {
			pe.Attempts = info.Attempts
		}
		if pe.GaveUp == "" && pe.Kind != providers.KindCanceled {
			pe.GaveUp = string(info.GaveUp)
		}
	}
	return pe
}

// chainError returns the failure of a call whose chain found no answer: the one failure
// when only one provider was tried, else a *ChainError.
func chainError(failures []*providers.Error, skipped []string, stopped bool) error {
	if len(failures) == 1 {
		return failures[0]
	}
	return &ChainError{Cause: explain(failures, stopped), Failures: failures, Skipped: skipped}
}

// explain picks the failure that explains the outcome of a chain: the one that stopped it
// (a failure the request caused, or the caller's cancellation); else, when every provider
// failed, the first failure that may pass (so the error is Temporary exactly when trying the
// call again later may succeed); else the first.
func explain(failures []*providers.Error, stopped bool) *providers.Error {
	if stopped {
		return failures[len(failures)-1]
	}
	for _, f := range failures {
		if f.Temporary() {
			return f
		}
	}
	return failures[0]
}

// ChainError is returned when more than one provider of a fallback chain failed. It leads with
// Cause, the failure that explains the outcome, which errors.As finds first: the failure that
// stopped the chain, or, when every provider failed, the first that may pass (Temporary), else
// the first. Failures holds every provider's failure in chain order; Cause is one of them,
// except when the call's whole-call deadline ran out between two tries (Cause is then the
// deadline's, and names no provider).
type ChainError struct {
	Cause    *providers.Error
	Failures []*providers.Error
	// Skipped names the providers of the chain that could not serve the call, with what they
	// lack, e.g. "claude (no embeddings)".
	Skipped []string
}

// Error prints Cause, then where it stands among the failures and each other failure once, in
// chain order, numbered by its place in the chain's tries:
//
//	b: timeout: …; gave up after 1 attempt: deadline (led by failure 2 of 2; also failed: 1. a: overloaded (HTTP 503): …)
//
// A failure that repeats an earlier one (a route asked again failed the same way; only the
// server's request ID differs) is named by its number: "2. the same as 1 [request …]".
//
// A Cause that is none of the Failures (the deadline's) is followed by all of them.
func (e *ChainError) Error() string {
	var b strings.Builder
	b.WriteString(e.Cause.Error())
	lead := slices.Index(e.Failures, e.Cause)
	var parts []string
	switch {
	case lead >= 0:
		parts = append(parts, fmt.Sprintf("led by failure %d of %d", lead+1, len(e.Failures)))
	case len(e.Failures) > 0:
		parts = append(parts, fmt.Sprintf("after %d failures", len(e.Failures)))
	}
	var others strings.Builder
	for i, f := range e.Failures {
		if i == lead {
			continue
		}
		if others.Len() > 0 {
			others.WriteString("; ")
		}
		if j := e.sameAs(i, lead); j >= 0 {
			// The same failure again (a route asked twice): named once, its request told apart.
			fmt.Fprintf(&others, "%d. the same as %d", i+1, j+1)
			if f.RequestID != "" {
				fmt.Fprintf(&others, " [request %s]", f.RequestID)
			}
			continue
		}
		fmt.Fprintf(&others, "%d. %s", i+1, f.Error())
	}
	switch {
	case others.Len() == 0:
	case lead >= 0:
		parts = append(parts, "also failed: "+others.String())
	default:
		parts[0] += ": " + others.String()
	}
	if len(e.Skipped) > 0 {
		parts = append(parts, "skipped: "+strings.Join(e.Skipped, ", "))
	}
	if len(parts) > 0 {
		b.WriteString(" (")
		b.WriteString(strings.Join(parts, "; "))
		b.WriteString(")")
	}
	return b.String()
}

// sameAs returns the place of the first failure before i, or the lead (whose text comes
// first), that failed as failure i did — the same text but for the server's request ID —
// and -1 when none did.
func (e *ChainError) sameAs(i, lead int) int {
	text := func(f *providers.Error) string {
		cp := *f
		cp.RequestID = ""
		return cp.Error()
	}
	mine := text(e.Failures[i])
	if lead >= 0 && text(e.Failures[lead]) == mine {
		return lead
	}
	for j := range i {
		if j != lead && text(e.Failures[j]) == mine {
			return j
		}
	}
	return -1
}

// Temporary reports whether the call may succeed if tried again later: Cause's Temporary.
func (e *ChainError) Temporary() bool { return e.Cause.Temporary() }

// Unwrap returns Cause, then the other failures in chain order.
func (e *ChainError) Unwrap() []error {
	out := []error{e.Cause}
	for _, f := range e.Failures {
		if f != e.Cause {
			out = append(out, f)
		}
	}
	return out
}
