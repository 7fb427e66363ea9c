// Command relay runs a thin OpenAI-compatible relay over steady's ChatStream — the shape of a
// gateway — and reads an answer through it while the primary provider's stream is cut in the
// middle. With rescue "continue" (the default) the caller reads one answer, whole, with
// nothing repeated; with "off" it reads the part delivered and an error event; with "restart"
// it would read the first part and then the whole answer again, which is why a relay never
// uses it.
//
//	go run ./examples/relay
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		os.Exit(1)
	}
}

// answer is what both providers would answer; the primary's stream is cut after its fifth word.
const answer = "one two three four five six seven eight nine ten"

func run(ctx context.Context, out io.Writer) error {
	primary := mocks.NewServer(mocks.WithReply(answer), mocks.WithScript(mocks.CutStream(5).CountingContent().Always()))
	defer primary.Close()
	claude := mocks.NewServer(mocks.WithReply(answer))
	defer claude.Close()
	c, err := newClient(primary, claude, resilience.DefaultOptions())
	if err != nil {
		return err
	}
	defer c.Close()
	for _, mode := range []string{resilience.RescueContinue, resilience.RescueOff, resilience.RescueRestart} {
		srv := httptest.NewServer(relay(c, mode))
		got, err := ask(ctx, srv.URL, "Count to ten.")
		srv.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%-8s %q, complete: %v\n", mode, got.text, got.done)
	}
	return nil
}

// newClient is a chain of an OpenAI provider on primary and a Claude model that takes a
// prefill on claude, under policy.
func newClient(primary, claude *mocks.Server, policy resilience.Options) (*client.Client, error) {
	return client.New(
		client.WithProvider("openai", policy, func(hc *http.Client) (providers.Provider, error) {
			return openai.New(openai.Config{Name: "openai", BaseURL: primary.OpenAIBaseURL(), APIKey: "sk-example",
				HTTPClient: hc, Model: "gpt-4o-mini"})
		}),
		client.WithProvider("claude", policy, func(hc *http.Client) (providers.Provider, error) {
			return anthropic.New(anthropic.Config{Name: "claude", BaseURL: claude.AnthropicBaseURL(), APIKey: "sk-ant-example",
				HTTPClient: hc, Model: "claude-haiku-4-5"})
		}),
		client.WithFallback("openai", "claude"),
	)
}

// docs:begin relay
// relay serves OpenAI-compatible chat completion streams from c's ChatStream, writing each
// delta as it comes. Its rescue is "continue" (the default; mode is here to show the others):
// a stream cut after content goes on at a route that can continue it, and the caller reads one
// answer; where none can, the caller gets the part delivered and an error event, and no
// [DONE]. A relay cannot take back bytes it has sent, so it never uses "restart".
func relay(c *client.Client, mode string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil {
			http.Error(w, "the body is not a chat completion request", http.StatusBadRequest)
			return
		}
		req := &providers.ChatRequest{}
		for _, m := range in.Messages {
			req.Messages = append(req.Messages, providers.Message{Role: providers.Role(m.Role), Content: m.Content})
		}
		stream, err := c.ChatStream(r.Context(), req, client.WithRescue(mode))
		if err != nil {
			client.WriteError(w, err) // nothing sent yet: the status says what failed
			return
		}
		defer stream.Close()
		w.Header().Set("Content-Type", "text/event-stream")
		flush := w.(http.Flusher).Flush
		for delta, err := range stream.Deltas() {
			if err != nil { // after content: the status is sent, so the stream says it
				writeEvent(w, map[string]any{"error": map[string]string{"type": string(providers.KindOf(err)),
					"message": "the answer was cut"}})
				flush()
				return
			}
			choice := map[string]any{"index": 0, "delta": map[string]string{"content": delta.Text}}
			if delta.Done {
				choice["finish_reason"] = string(delta.FinishReason)
			}
			writeEvent(w, map[string]any{"object": "chat.completion.chunk", "choices": []any{choice}})
			flush()
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
		flush()
	})
}

func writeEvent(w io.Writer, v any) {
	data, _ := json.Marshal(v) // maps of strings: cannot fail
	_, _ = fmt.Fprintf(w, "data: %s\n\n", data)
}

// docs:end relay

// read is what a caller of the relay read: the text, and whether the stream ended with [DONE].
type read struct {
	text string
	done bool
}

// ask sends question to the relay at url and reads the answer as an OpenAI client would,
// calling first (if not nil) at the first text.
func ask(ctx context.Context, url, question string) (read, error) {
	return askWatching(ctx, url, question, nil)
}

func askWatching(ctx context.Context, url, question string, first func()) (read, error) {
	body, _ := json.Marshal(map[string]any{"model": "relay", "stream": true,
		"messages": []map[string]string{{"role": "user", "content": question}}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(string(body)))
	if err != nil {
		return read{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return read{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return read{}, fmt.Errorf("the relay answered %s", resp.Status)
	}
	var r read
	var text strings.Builder
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		data, ok := strings.CutPrefix(lines.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			r.done = true
			break
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(data), &chunk) != nil || len(chunk.Choices) == 0 {
			continue // the error event: the stream ends without [DONE]
		}
		if c := chunk.Choices[0].Delta.Content; c != "" {
			if text.Len() == 0 && first != nil {
				first()
			}
			text.WriteString(c)
		}
	}
	r.text = text.String()
	return r, lines.Err()
}
