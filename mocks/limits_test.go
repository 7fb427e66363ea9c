package mocks_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func chatWithKey(t *testing.T, s *mocks.Server, path, key, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.URL()+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if strings.HasPrefix(path, "/v1/messages") {
		req.Header.Set("X-Api-Key", key)
		req.Header.Set("Anthropic-Version", "2023-06-01")
	} else {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp
}

const smallChat = `{"model":"gpt-4o-mini","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`

func TestRateLimits_RequestsPerKeyRefillOverTheMinute(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
	s := mocks.NewServer(mocks.WithClock(clock.Now), mocks.WithRateLimits(mocks.RateLimits{RequestsPerMinute: 3, Minute: time.Second}))
	defer s.Close()
	for i, want := range []string{"2", "1", "0"} {
		resp := chatWithKey(t, s, "/v1/chat/completions", "sk-a", smallChat)
		if resp.StatusCode != 200 || resp.Header.Get("X-Ratelimit-Remaining-Requests") != want ||
			resp.Header.Get("X-Ratelimit-Limit-Requests") != "3" {
			t.Fatalf("request %d: %d, remaining %q", i, resp.StatusCode, resp.Header.Get("X-Ratelimit-Remaining-Requests"))
		}
	}
	resp := chatWithKey(t, s, "/v1/chat/completions", "sk-a", smallChat)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After-Ms") != "333" || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("over the limit: %d, retry-after-ms %q", resp.StatusCode, resp.Header.Get("Retry-After-Ms"))
	}
	rl := providers.ParseRateLimit(resp.Header, clock.Now())
	if rl == nil || rl.Requests.Remaining != 0 || rl.Requests.Reset.Sub(clock.Now()) != time.Second {
		t.Fatalf("snapshot %+v", rl)
	}
	if resp := chatWithKey(t, s, "/v1/chat/completions", "sk-b", smallChat); resp.StatusCode != 200 {
		t.Fatalf("another key shares the budget: %d", resp.StatusCode)
	}
	clock.Add(340 * time.Millisecond) // one request's worth refilled
	if resp := chatWithKey(t, s, "/v1/chat/completions", "sk-a", smallChat); resp.StatusCode != 200 {
		t.Fatalf("after the refill: %d", resp.StatusCode)
	}
	if resp := chatWithKey(t, s, "/v1/chat/completions", "sk-a", smallChat); resp.StatusCode != 429 {
		t.Fatalf("the refill was one request: %d", resp.StatusCode)
	}
	if j := s.Journal().Requests(); j[3].Step != "429 rate limit" {
		t.Fatalf("journal step %q", j[3].Step)
	}
}

func TestRateLimits_TokensAndPerKeyLimitsInBothWireFormats(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
	s := mocks.NewServer(mocks.WithClock(clock.Now),
		mocks.WithKeyRateLimits("sk-small", mocks.RateLimits{TokensPerMinute: 30}))
	defer s.Close()
	if resp := chatWithKey(t, s, "/v1/chat/completions", "sk-small", smallChat); resp.StatusCode != 200 ||
		resp.Header.Get("X-Ratelimit-Remaining-Tokens") != "19" { // 30 − (1 prompt + 10 max_tokens)
		t.Fatalf("%d, remaining tokens %q", resp.StatusCode, resp.Header.Get("X-Ratelimit-Remaining-Tokens"))
	}
	big := `{"model":"claude-haiku-4-5","max_tokens":25,"messages":[{"role":"user","content":"hi"}]}`
	resp := chatWithKey(t, s, "/v1/messages", "sk-small", big)
	if resp.StatusCode != 429 {
		t.Fatalf("26 tokens with 19 left: %d", resp.StatusCode)
	}
	rl := providers.ParseRateLimit(resp.Header, clock.Now())
	if rl == nil || rl.Tokens.Limit != 30 || rl.Tokens.Remaining != 19 || !rl.Tokens.Reset.After(clock.Now()) {
		t.Fatalf("anthropic snapshot %+v", rl)
	}
	if resp := chatWithKey(t, s, "/v1/messages", "sk-other", big); resp.StatusCode != 200 {
		t.Fatalf("a key without limits: %d", resp.StatusCode)
	}
}

func TestRateLimits_FromTheScenarioFile(t *testing.T) {
	cfg, err := mocks.ParseConfig([]byte(`{"limits":{"requestsPerMinute":1,"minuteMs":60000},"keyLimits":{"sk-vip":{"requestsPerMinute":100}}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := mocks.NewServer(mocks.WithConfig(cfg))
	defer s.Close()
	for i := range 2 {
		if resp := chatWithKey(t, s, "/v1/chat/completions", "sk-vip", smallChat); resp.StatusCode != 200 {
			t.Fatalf("vip %d: %d", i, resp.StatusCode)
		}
	}
	chatWithKey(t, s, "/v1/chat/completions", "sk-a", smallChat)
	if resp := chatWithKey(t, s, "/v1/chat/completions", "sk-a", smallChat); resp.StatusCode != 429 {
		t.Fatalf("the default limit: %d", resp.StatusCode)
	}
}

func TestRateLimits_BadScenarioLimitsAreRefused(t *testing.T) {
	_, err := mocks.ParseConfig([]byte(`{"keyLimits":{"sk-a":{"tokensPerMinute":-5}}}`))
	if err == nil || !strings.Contains(err.Error(), "keyLimits.sk-a") {
		t.Fatalf("got %v", err)
	}
}
