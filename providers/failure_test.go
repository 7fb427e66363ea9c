package providers

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
)

// kinded is an error that names its kind, hint and status, as the resilience pipeline's do.
type kinded struct{}

func (kinded) Error() string                 { return "circuit open" }
func (kinded) ErrorKind() string             { return string(KindCircuitOpen) }
func (kinded) RetryAfterHint() time.Duration { return 3 * time.Second }
func (kinded) HTTPStatus() int               { return 503 }

func TestClassify(t *testing.T) {
	bg := context.Background()
	ue := &url.Error{Op: "Post", URL: "https://user:pw@api.example/v1?key=sk-abcdefghijklmnopqrstuvwx", Err: errors.New("connection refused")}
	if e := Classify(bg, "openai", ue); e.Kind != KindUnavailable || e.Message != "connection refused" || e.Provider != "openai" || !errors.Is(e, ue) {
		t.Errorf("a transport error: %s %q", e.Kind, e.Message)
	}
	if e := Classify(bg, "p", errors.New("echo sk-abcdefghijklmnopqrstuvwx")); strings.Contains(e.Message, "abcdefgh") {
		t.Errorf("a credential-shaped value was copied: %q", e.Message)
	}
	e := Classify(bg, "p", kinded{})
	if e.Kind != KindCircuitOpen || e.RetryAfter != 3*time.Second || e.StatusCode != 503 {
		t.Errorf("a kinded error: %s %v %d", e.Kind, e.RetryAfter, e.StatusCode)
	}
	typed := &Error{Kind: KindAuth}
	if got := Classify(bg, "p", errors.Join(errors.New("x"), typed)); got != typed {
		t.Errorf("an *Error is returned as it is")
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	seen := errors.New("use of closed network connection")
	if e := Classify(ctx, "p", seen); e.Kind != KindCanceled || !errors.Is(e, context.Canceled) || !errors.Is(e, seen) {
		t.Errorf("the caller's cancellation: %s %v", e.Kind, e)
	}
	if e := Classify(ctx, "p", kinded{}); e.Kind != KindCanceled {
		t.Errorf("the caller's cancellation wins over a kinded error: %s", e.Kind)
	}
	if e := Classify(bg, "p", nil); e.Kind != KindUnavailable || e.Message == "" {
		t.Errorf("no error: %s %q", e.Kind, e.Message)
	}
}
