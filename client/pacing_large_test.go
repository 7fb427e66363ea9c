package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// usageServer answers every chat with the usage it is given (none when both are 0) and, when
// limit is above 0, an x-ratelimit-limit-tokens header stating that limit and nothing of what
// remains (as some self-hosted servers do); it counts the requests it received.
func usageServer(t *testing.T, input, output, limit int, sent *atomic.Int64) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		if limit > 0 {
			w.Header().Set("X-Ratelimit-Limit-Tokens", fmt.Sprint(limit))
		}
		w.Header().Set("Content-Type", "application/json")
		usage := ""
		if input+output > 0 {
			usage = fmt.Sprintf(`,"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}`, input, output, input+output)
		}
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,`+
			`"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]%s}`, usage)
	}))
	t.Cleanup(s.Close)
	return s
}

// largeCall is a chat the client estimates at 4,100 tokens: a 100-token prompt and up to 4,000
// tokens of answer.
func largeCall() *providers.ChatRequest {
	return &providers.ChatRequest{Model: "gpt-4o", MaxTokens: 4000,
		Messages: []providers.Message{{Role: providers.RoleUser, Content: strings.Repeat("abcd", 100)}}}
}

// pacedClient is a client of one provider at url whose tokens-per-minute limit is tpm (0:
// learnt from the answers), on clock; a call that would wait for room is refused instead.
func pacedClient(t *testing.T, url string, tpm int, clock resilience.Clock) *client.Client {
	o := resilience.DefaultOptions()
	o.PaceTokensPerMinute = tpm
	o.RetryCount = 0
	o.RetryBaseDelaySeconds, o.RetryMaxDelaySeconds = 0.5, 0.5 // a call refused rather than wait on the manual clock
	c, err := client.New(client.WithClock(clock), client.WithProvider("openai", o, func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: "openai", APIKey: "sk-test", BaseURL: url + "/v1", HTTPClient: hc})
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Under a budget of 2,000 tokens a minute, calls estimated at 4,100 tokens — larger than the
// whole budget — go through at most once a minute: each waits for the whole budget. One that
// reports it used its 4,100 tokens leaves what it used beyond the budget as a debt (at most one
// budget) the next waits for too: once every two minutes. Before calls settled on what they
// were debited, that debt was dropped and they went once a minute.
func TestPacing_CallsLargerThanTheBudgetGoAtMostOnceAMinute(t *testing.T) {
	const minutes = 5
	for _, tc := range []struct {
		name          string
		input, output int
		most          int64
	}{
		{"usage as estimated", 4000, 100, 3}, // at 0, 2 and 4 minutes
		{"usage unknown", 0, 0, minutes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sent atomic.Int64
			s := usageServer(t, tc.input, tc.output, 0, &sent)
			clock := backend.NewManualClock()
			c := pacedClient(t, s.URL, 2000, clock)
			for range minutes * 60 {
				_, err := c.Chat(context.Background(), largeCall())
				if err != nil && providers.KindOf(err) != providers.KindRateLimited {
					t.Fatalf("a call failed with %v, want it served or refused as rate_limited", err)
				}
				clock.Advance(time.Second)
			}
			if n := sent.Load(); n < 1 || n > tc.most {
				t.Fatalf("%d calls of 4,100 estimated tokens were sent in %d minutes under a budget of 2,000 a minute: "+
					"want 1 to %d", n, minutes, tc.most)
			}
		})
	}
}

// A budget learnt from the answers (the server states its limit, not what remains) is not
// known as the first call is sent, so that call is debited nothing; its usage is then a debt,
// never a credit. Before calls settled on what they were debited, the first call's estimate was
// credited back in full and the next calls spent that credit: twenty calls of 4,100 estimated
// tokens went through within a second under a budget of 2,000 tokens a minute.
func TestPacing_ALearntBudgetCreditsOnlyWhatWasDebited(t *testing.T) {
	var sent atomic.Int64
	s := usageServer(t, 100, 1, 2000, &sent)
	clock := backend.NewManualClock()
	c := pacedClient(t, s.URL, 0, clock)
	for range 20 {
		_, err := c.Chat(context.Background(), largeCall())
		if err != nil && providers.KindOf(err) != providers.KindRateLimited {
			t.Fatalf("a call failed with %v, want it served or refused as rate_limited", err)
		}
	}
	// The first call went before the budget was known; the second waits for the whole budget
	// less the first's usage (101 tokens): three seconds away.
	if n := sent.Load(); n != 1 {
		t.Fatalf("%d of 20 calls of 4,100 estimated tokens went through at once under a learnt budget of 2,000 a minute, want 1", n)
	}
	clock.Advance(4 * time.Second)
	if _, err := c.Chat(context.Background(), largeCall()); err != nil {
		t.Fatalf("after the first call's 101 tokens had refilled, the next was refused: %v", err)
	}
}
