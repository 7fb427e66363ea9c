package mocks_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadyllm/steady/mocks"
)

// wordsTokenizer counts 1.3 tokens a word, rounded up: nothing like mocks.Tokens' four
// bytes a token on the long words below.
func wordsTokenizer(s string) int { return (len(strings.Fields(s))*13 + 9) / 10 }

const (
	tokSystem = "Answer supercalifragilistically"                            // 2 words: 3 tokens, Tokens says 8
	tokUser   = "antidisestablishmentarianism floccinaucinihilipilification" // 2 words: 3 tokens, Tokens says 15
)

// TestWithTokenizer_CountsThePromptEverywhere: a server given a tokenizer reports prompt
// usage by it on every route that reports one, streamed or not.
func TestWithTokenizer_CountsThePromptEverywhere(t *testing.T) {
	var calls atomic.Int64
	s := newServer(t, mocks.WithTokenizer(func(s string) int { calls.Add(1); return wordsTokenizer(s) }))
	sys, user := wordsTokenizer(tokSystem), wordsTokenizer(tokUser)
	if sys == mocks.Tokens(tokSystem) || user == mocks.Tokens(tokUser) {
		t.Fatal("the texts do not tell the tokenizer from Tokens")
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	chat := `{"model":"gpt-4o","messages":[{"role":"system","content":` + q(tokSystem) + `},{"role":"user","content":` + q(tokUser) + `}]`
	messages := `{"model":"claude-sonnet-4-5","system":` + q(tokSystem) + `,"messages":[{"role":"user","content":[{"type":"text","text":` + q(tokUser) + `}]}]`
	responses := `{"model":"gpt-4o","instructions":` + q(tokSystem) + `,"input":` + q(tokUser)
	for _, tc := range []struct {
		name, route string
		hdr         map[string]string
		body        string
		stream      bool
		event       string // the event that carries usage in a stream ("" for the last with any)
		usage       []any  // the path to the prompt tokens
		want        int
	}{
		{"chat", "/v1/chat/completions", openAIHeaders(), chat + `}`, false, "", []any{"usage", "prompt_tokens"}, sys + user},
		{"chat stream", "/v1/chat/completions", openAIHeaders(), chat + `,"stream":true,"stream_options":{"include_usage":true}}`, true, "", []any{"usage", "prompt_tokens"}, sys + user},
		{"responses", "/v1/responses", openAIHeaders(), responses + `}`, false, "", []any{"usage", "input_tokens"}, sys + user},
		{"responses stream", "/v1/responses", openAIHeaders(), responses + `,"stream":true}`, true, "response.completed", []any{"response", "usage", "input_tokens"}, sys + user},
		{"messages", "/v1/messages", anthropicHeaders(), messages + `,"max_tokens":64}`, false, "", []any{"usage", "input_tokens"}, sys + user},
		{"messages stream", "/v1/messages", anthropicHeaders(), messages + `,"max_tokens":64,"stream":true}`, true, "message_start", []any{"message", "usage", "input_tokens"}, sys + user},
		{"count_tokens", "/v1/messages/count_tokens", anthropicHeaders(), messages + `}`, false, "", []any{"input_tokens"}, sys + user},
		{"embeddings", "/v1/embeddings", openAIHeaders(), `{"model":"text-embedding-3-small","input":[` + q(tokSystem) + `,` + q(tokUser) + `]}`, false, "", []any{"usage", "prompt_tokens"}, sys + user},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got any
			if tc.stream {
				res, evs, err := stream(t, s, tc.route, tc.hdr, tc.body)
				if err != nil || res.StatusCode != http.StatusOK {
					t.Fatalf("%v %d", err, res.StatusCode)
				}
				for _, ev := range evs {
					if (tc.event == "" || ev.name == tc.event) && strings.HasPrefix(ev.data, "{") {
						if v := path(decode(t, []byte(ev.data)), tc.usage...); v != nil {
							got = v
						}
					}
				}
			} else {
				res, b := mustDo(t, s, http.MethodPost, tc.route, tc.hdr, tc.body)
				if res.StatusCode != http.StatusOK {
					t.Fatalf("%d %s", res.StatusCode, b)
				}
				got = path(decode(t, b), tc.usage...)
			}
			if got != float64(tc.want) {
				t.Errorf("prompt tokens %v, want %d (the tokenizer's)", got, tc.want)
			}
		})
	}
	if calls.Load() == 0 {
		t.Error("the tokenizer was never called")
	}
}

// TestWithTokenizer_RateLimitsSpendItsCount: the prompt's part of a call's cost under a
// token rate limit is the tokenizer's count.
func TestWithTokenizer_RateLimitsSpendItsCount(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	s := newServer(t, mocks.WithClock(clock.Now), mocks.WithTokenizer(func(string) int { return 40 }),
		mocks.WithRateLimits(mocks.RateLimits{TokensPerMinute: 100}))
	body := `{"model":"gpt-4o","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	if res := chatWithKey(t, s, "/v1/chat/completions", "sk-a", body); res.StatusCode != 200 ||
		res.Header.Get("X-Ratelimit-Remaining-Tokens") != "50" { // 100 − (40 prompt + 10 max_tokens)
		t.Fatalf("%d, remaining tokens %q", res.StatusCode, res.Header.Get("X-Ratelimit-Remaining-Tokens"))
	}
	msgs := `{"model":"claude-haiku-4-5","max_tokens":11,"messages":[{"role":"user","content":"hi"}]}`
	if res := chatWithKey(t, s, "/v1/messages", "sk-a", msgs); res.StatusCode != 429 {
		t.Fatalf("51 tokens with 50 left: %d", res.StatusCode)
	}
}

// TestWithTokenizer_BoundsAndDefault: nil restores Tokens; a count below 0 is 0 (and the
// prompt at least 1), one beyond 2²⁴ is cut; the empty text is not passed to the tokenizer;
// concurrent calls share it safely (run with -race).
func TestWithTokenizer_BoundsAndDefault(t *testing.T) {
	body := `{"model":"gpt-4o","messages":[{"role":"system","content":""},{"role":"user","content":"hello there"}]}`
	prompt := func(s *mocks.Server) any {
		res, b := mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", res.StatusCode, b)
		}
		return path(decode(t, b), "usage", "prompt_tokens")
	}
	if got := prompt(newServer(t, mocks.WithTokenizer(nil))); got != float64(mocks.Tokens("hello there")) {
		t.Errorf("nil tokenizer: %v, want Tokens' %d", got, mocks.Tokens("hello there"))
	}
	if got := prompt(newServer(t, mocks.WithTokenizer(func(string) int { return -50 }))); got != float64(1) {
		t.Errorf("negative counts: %v, want 1", got)
	}
	if got := prompt(newServer(t, mocks.WithTokenizer(func(string) int { return 1 << 40 }))); got != float64(1<<24) {
		t.Errorf("huge counts: %v, want 2^24", got)
	}
	var mu sync.Mutex
	var seen []string
	s := newServer(t, mocks.WithTokenizer(func(s string) int {
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
		return 7
	}))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got := prompt(s); got != float64(7) {
				t.Errorf("concurrent: %v, want 7", got)
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, x := range seen {
		if x != "hello there" {
			t.Errorf("the tokenizer was given %q", x)
		}
	}
}

// TestWithTokenizer_ContextWindowsUseItsCount: a prompt too long by the tokenizer's count is
// the provider's 400, with that count in the message.
func TestWithTokenizer_ContextWindowsUseItsCount(t *testing.T) {
	s := newServer(t, mocks.WithTokenizer(func(string) int { return 9 }),
		mocks.WithContextWindows(map[string]int{"claude-tiny": 8}))
	res, b := mustDo(t, s, http.MethodPost, "/v1/messages", anthropicHeaders(), messagesFor("claude-tiny", "1"))
	if msg := path(decode(t, b), "error", "message"); res.StatusCode != 400 || msg != "prompt is too long: 9 tokens > 8 maximum" {
		t.Errorf("%d %v", res.StatusCode, msg)
	}
}
