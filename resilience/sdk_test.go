package resilience

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A request from a Stainless SDK gets the pipeline's failure as an answer it will not retry;
// any other client gets the error itself.
func TestSDK_RejectionsAnswerStainlessRequests(t *testing.T) {
	s := newScript(t, ok())
	c, p := client(t, breakerOptions(1, 3600))
	p.Isolate()
	req, _ := http.NewRequest(http.MethodPost, s.url(), strings.NewReader(`{}`))
	req.Header.Set("X-Stainless-Lang", "go")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("got the error %v, want an answer", err)
	}
	defer resp.Body.Close()
	var body struct {
		Type  string
		Error struct{ Type, Code, Message string }
	}
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &body); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	if resp.StatusCode != 503 || resp.Header.Get("X-Should-Retry") != "false" || body.Error.Code != "circuit_open" ||
		!errors.Is(Rejection(resp), ErrCircuitOpen) {
		t.Fatalf("status %d, headers %v, body %s, rejection %v", resp.StatusCode, resp.Header, data, Rejection(resp))
	}
	if s.hits.Load() != 0 {
		t.Fatal("the isolated circuit let a request through")
	}

	// Without the SDK's headers, or once the caller has given up, it is the error as ever.
	if _, err := post(t, c, s.url(), `{}`); !errors.Is(err, ErrCircuitOpen) {
		t.Fatalf("plain client: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, s.url(), strings.NewReader(`{}`))
	req.Header.Set("X-Stainless-Lang", "go")
	if _, err := c.Do(req); err == nil {
		t.Fatal("a canceled call got an answer")
	}
	if Rejection(nil) != nil || Rejection(&http.Response{}) != nil {
		t.Fatal("Rejection of an ordinary response")
	}
}

// A Stainless SDK's answer for a full bulkhead carries the bulkhead's estimate of when a slot
// would be free, as the hint its own retry logic reads.
func TestSDK_BulkheadAnswerCarriesTheRetryAfterEstimate(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/v1/chat/completions", strings.NewReader(`{}`))
	req.Header.Set("X-Stainless-Lang", "go")
	resp := answerForSDK(req, &BulkheadRejectedError{Pipeline: "openai", Reason: RejectedShed, RetryAfter: 1500 * time.Millisecond})
	if resp == nil {
		t.Fatal("no answer")
	}
	defer resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After-Ms") != "1500" {
		t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
	}
	resp2 := answerForSDK(req, &BulkheadRejectedError{Pipeline: "openai"})
	defer resp2.Body.Close()
	if resp2.Header.Get("Retry-After-Ms") != "" {
		t.Fatalf("an unknown estimate sent a hint: %v", resp2.Header)
	}
}
