package providers_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/providers"
)

func TestError_MessageKindsAndMatching(t *testing.T) {
	e := &providers.Error{Provider: "openai", Kind: providers.KindRateLimited, StatusCode: 429,
		Message: "slow down", RetryAfter: 1500 * time.Millisecond, RequestID: "req_9"}
	want := "openai: rate_limited (HTTP 429): slow down; retry after 1.5s [request req_9]"
	if e.Error() != want {
		t.Fatalf("Error() = %q, want %q", e.Error(), want)
	}
	wrapped := fmt.Errorf("calling: %w", e)
	if providers.KindOf(wrapped) != providers.KindRateLimited || providers.KindOf(errors.New("x")) != providers.KindUnknown {
		t.Fatal("KindOf does not see through wrapping")
	}
	cause := &providers.Error{Provider: "p", Kind: providers.KindUnavailable, Err: errors.New("connection reset")}
	if !strings.Contains(cause.Error(), "connection reset") {
		t.Fatalf("without a message the cause is shown: %q", cause.Error())
	}
	temporary := map[providers.ErrorKind]bool{
		providers.KindRateLimited: true, providers.KindOverloaded: true, providers.KindUnavailable: true,
		providers.KindTimeout: true, providers.KindCircuitOpen: true, providers.KindBulkheadFull: true,
		providers.KindStreamTruncated: true, providers.KindQuotaExhausted: false, providers.KindAuth: false,
		providers.KindBadRequest: false, providers.KindContextTooLong: false, providers.KindContentFiltered: false,
		providers.KindCanceled: false, providers.KindUnknown: false, providers.KindRefused: false,
	}
	for k, want := range temporary {
		if got := (&providers.Error{Kind: k}).Temporary(); got != want {
			t.Errorf("%s: Temporary() = %v, want %v", k, got, want)
		}
	}
	if (providers.Usage{InputTokens: 3, OutputTokens: 4}).Total() != 7 {
		t.Fatal("Usage.Total")
	}
}

func TestError_PrefillSentinelMatchesOnlyItsCode(t *testing.T) {
	e := &providers.Error{Kind: providers.KindBadRequest, Code: providers.CodePrefillUnsupported}
	if !errors.Is(fmt.Errorf("calling: %w", e), providers.ErrPrefillUnsupported) {
		t.Fatal("a wrapped prefill error does not match")
	}
	other := &providers.Error{Kind: providers.KindBadRequest, Code: "invalid_request_body", Err: errors.New("x")}
	if errors.Is(other, providers.ErrPrefillUnsupported) {
		t.Fatal("another bad request matches")
	}
}

func TestError_GoStringShowsUsageAndOverflow(t *testing.T) {
	e := &providers.Error{Kind: providers.KindContextTooLong, Usage: &providers.Usage{InputTokens: 3},
		Overflow: &providers.ContextOverflow{Window: 10, Requested: 12}}
	s := e.GoString()
	if !strings.Contains(s, "Usage:{InputTokens:3") || !strings.Contains(s, "Overflow:{Window:10 Requested:12") {
		t.Fatal(s)
	}
	if s := (&providers.Error{}).GoString(); !strings.Contains(s, "Usage:nil, Overflow:nil") {
		t.Fatal(s)
	}
}
