package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
)

// wireKinds are the two wire formats, each as a client with one provider over the fake.
var wireKinds = []struct {
	name string
	add  func(s *mocks.Server) client.Option
}{
	{"openai", func(s *mocks.Server) client.Option { return openAIProvider("p", s, policy()) }},
	{"anthropic", func(s *mocks.Server) client.Option { return anthropicProvider("p", s, policy()) }},
}

// lastBody decodes the body of the last request s received.
func lastBody(t *testing.T, s *mocks.Server) map[string]any {
	t.Helper()
	r, ok := s.Journal().Last()
	if !ok {
		t.Fatal("no request")
	}
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// at walks a decoded JSON value by keys and indexes.
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

var png = []byte("\x89PNG\r\n\x1a\n fake image bytes")

func TestFullRequest_ImageParts(t *testing.T) {
	for _, k := range wireKinds {
		t.Run(k.name, func(t *testing.T) {
			s := mocks.NewServer(mocks.WithReply("a cat"))
			defer s.Close()
			c := newClient(t, k.add(s))
			req := &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Parts: []providers.Part{
				providers.TextPart("what is in these?"),
				providers.ImagePart(providers.Image{Data: png, MediaType: "image/png", Detail: "low"}),
				providers.ImagePart(providers.Image{URL: "https://example.com/cat.jpg"}),
			}}}}
			resp, err := c.Chat(context.Background(), req)
			if err != nil || resp.Message.Content != "a cat" {
				t.Fatalf("%v %v", resp, err)
			}
			b := lastBody(t, s)
			content := at(b, "messages", 0, "content")
			if k.name == "openai" {
				if at(content, 0, "type") != "text" || at(content, 1, "type") != "image_url" ||
					!strings.HasPrefix(at(content, 1, "image_url", "url").(string), "data:image/png;base64,") ||
					at(content, 1, "image_url", "detail") != "low" || at(content, 2, "image_url", "url") != "https://example.com/cat.jpg" {
					t.Fatalf("content %v", content)
				}
				return
			}
			if at(content, 1, "type") != "image" || at(content, 1, "source", "type") != "base64" ||
				at(content, 1, "source", "media_type") != "image/png" || at(content, 2, "source", "url") != "https://example.com/cat.jpg" {
				t.Fatalf("content %v", content)
			}
		})
	}
	bad := &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "x",
		Parts: []providers.Part{providers.ImagePart(providers.Image{Data: png})}}}}
	err := bad.Validate()
	if err == nil || !strings.Contains(err.Error(), "Content or Parts") || !strings.Contains(err.Error(), "MediaType") {
		t.Fatalf("validation: %v", err)
	}
}

var weatherSchema = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"celsius":{"type":"number"}},` +
	`"required":["city","celsius"],"additionalProperties":false}`)

func TestFullRequest_StructuredOutput(t *testing.T) {
	for _, k := range append(wireKinds, struct {
		name string
		add  func(s *mocks.Server) client.Option
	}{"anthropic-by-tool", func(s *mocks.Server) client.Option {
		return client.WithProvider("p", policy(), func(hc *http.Client) (providers.Provider, error) {
			return anthropic.New(anthropic.Config{Name: "p", BaseURL: s.AnthropicBaseURL(), APIKey: sentinelKey, HTTPClient: hc,
				Model: "claude-haiku-4-5", SchemaByTool: true})
		})
	}}) {
		t.Run(k.name, func(t *testing.T) {
			s := mocks.NewServer()
			defer s.Close()
			c := newClient(t, k.add(s))
			req := hello()
			req.Schema = &providers.JSONSchema{Name: "weather", Schema: weatherSchema, Strict: true}
			for _, stream := range []bool{false, true} {
				var content string
				var raw json.RawMessage
				if stream {
					st, err := c.ChatStream(context.Background(), req)
					if err != nil {
						t.Fatal(err)
					}
					text, last, err := collect(t, st)
					_ = st.Close()
					if err != nil || last.FinishReason != providers.FinishStop {
						t.Fatalf("stream: %q %+v %v", text, last, err)
					}
					content, raw = text, json.RawMessage(text)
				} else {
					resp, err := c.Chat(context.Background(), req)
					if err != nil {
						t.Fatal(err)
					}
					if len(resp.Message.ToolCalls) != 0 || resp.FinishReason != providers.FinishStop {
						t.Fatalf("response %+v", resp)
					}
					var w struct {
						City    string
						Celsius float64
					}
					if err := resp.DecodeJSON(&w); err != nil || w.City == "" || w.Celsius == 0 {
						t.Fatalf("decoded %+v from %s: %v", w, resp.JSON, err)
					}
					content, raw = resp.Message.Content, resp.JSON
				}
				if !json.Valid(raw) || !strings.Contains(content, `"city"`) {
					t.Fatalf("stream=%v: answer %q is not the schema's JSON", stream, content)
				}
			}
			b := lastBody(t, s)
			switch k.name {
			case "openai":
				if at(b, "response_format", "type") != "json_schema" || at(b, "response_format", "json_schema", "name") != "weather" ||
					at(b, "response_format", "json_schema", "strict") != true || at(b, "response_format", "json_schema", "schema", "type") != "object" {
					t.Fatalf("response_format %v", b["response_format"])
				}
			case "anthropic":
				if at(b, "output_config", "format", "type") != "json_schema" || at(b, "output_config", "format", "schema", "type") != "object" {
					t.Fatalf("output_config %v", b["output_config"])
				}
			default:
				if at(b, "tool_choice", "type") != "tool" || at(b, "tool_choice", "name") != "weather" || at(b, "tools", 0, "name") != "weather" {
					t.Fatalf("forced tool use %v %v", b["tool_choice"], b["tools"])
				}
			}
		})
	}
}

func TestFullRequest_ToolChoiceAndParallelCalls(t *testing.T) {
	for _, k := range wireKinds {
		t.Run(k.name, func(t *testing.T) {
			s := mocks.NewServer()
			defer s.Close()
			c := newClient(t, k.add(s))
			no := false
			req := hello()
			req.Tools = []providers.Tool{{Name: "search", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)},
				{Name: "weather", Parameters: weatherSchema}}
			req.ToolChoice = providers.ToolChoice{Mode: providers.ToolChoiceTool, Name: "weather"}
			req.ParallelToolCalls = &no
			resp, err := c.Chat(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0].Name != "weather" ||
				!strings.Contains(resp.Message.ToolCalls[0].Arguments, `"city"`) || resp.FinishReason != providers.FinishToolCalls {
				t.Fatalf("response %+v", resp)
			}
			b := lastBody(t, s)
			if k.name == "openai" {
				if at(b, "tool_choice", "function", "name") != "weather" || b["parallel_tool_calls"] != false {
					t.Fatalf("body %v / %v", b["tool_choice"], b["parallel_tool_calls"])
				}
			} else if at(b, "tool_choice", "type") != "tool" || at(b, "tool_choice", "name") != "weather" ||
				at(b, "tool_choice", "disable_parallel_tool_use") != true {
				t.Fatalf("tool_choice %v", b["tool_choice"])
			}
			for mode, want := range map[providers.ToolChoiceMode][2]any{
				providers.ToolChoiceNone: {"none", "none"}, providers.ToolChoiceRequired: {"required", "any"}, providers.ToolChoiceAuto: {"auto", "auto"},
			} {
				req.ToolChoice = providers.ToolChoice{Mode: mode}
				if _, err := c.Chat(context.Background(), req); err != nil {
					t.Fatal(err)
				}
				b := lastBody(t, s)
				if k.name == "openai" && b["tool_choice"] != want[0] || k.name == "anthropic" && at(b, "tool_choice", "type") != want[1] {
					t.Fatalf("%s: tool_choice %v", mode, b["tool_choice"])
				}
			}
		})
	}
}

func TestFullRequest_ReasoningAndThinkingBlocks(t *testing.T) {
	t.Run("anthropic", func(t *testing.T) {
		s := mocks.NewServer(mocks.WithReply("42"))
		defer s.Close()
		c := newClient(t, anthropicProvider("p", s, policy()))
		req := hello()
		req.MaxTokens = 4096
		req.Reasoning = &providers.Reasoning{BudgetTokens: 2048}
		resp, err := c.Chat(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		th := resp.Message.Thinking
		if resp.Reasoning == "" || len(th) != 1 || th[0].Signature == "" || resp.Usage.ReasoningTokens == 0 || resp.Message.Content != "42" {
			t.Fatalf("response %+v", resp)
		}
		if b := lastBody(t, s); at(b, "thinking", "type") != "enabled" || at(b, "thinking", "budget_tokens") != float64(2048) {
			t.Fatalf("thinking %v", b["thinking"])
		}
		// The thinking streams as Reasoning deltas, before the text, and comes back signed.
		st, err := c.ChatStream(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		var reasoning, text strings.Builder
		var last providers.Delta
		for d, err := range st.Deltas() {
			if err != nil {
				t.Fatal(err)
			}
			if d.Reasoning != "" && text.Len() > 0 {
				t.Fatal("reasoning after the text")
			}
			reasoning.WriteString(d.Reasoning)
			text.WriteString(d.Text)
			last = d
		}
		_ = st.Close()
		if reasoning.String() != resp.Reasoning || text.String() != "42" || len(last.Thinking) != 1 ||
			last.Thinking[0].Signature == "" || last.Thinking[0].Text != th[0].Text {
			t.Fatalf("stream: reasoning %q, text %q, last %+v", reasoning.String(), text.String(), last)
		}
		// Multi-turn: the assistant turn goes back with its signed thinking.
		next := hello()
		next.MaxTokens = 4096
		next.Reasoning = req.Reasoning
		next.Messages = append(next.Messages, resp.Message, providers.Message{Role: providers.RoleUser, Content: "and?"})
		if _, err := c.Chat(context.Background(), next); err != nil {
			t.Fatal(err)
		}
		b := lastBody(t, s)
		if at(b, "messages", 1, "content", 0, "type") != "thinking" || at(b, "messages", 1, "content", 0, "signature") != th[0].Signature {
			t.Fatalf("assistant turn sent back as %v", at(b, "messages", 1))
		}
		bad := hello()
		bad.MaxTokens = 1000
		bad.Reasoning = &providers.Reasoning{BudgetTokens: 2000}
		if _, err := c.Chat(context.Background(), bad); !isKind(err, providers.KindBadRequest) {
			t.Fatalf("a budget above MaxTokens: %v", err)
		}
	})
	t.Run("openai", func(t *testing.T) {
		s := mocks.NewServer(mocks.WithReply("42"))
		defer s.Close()
		c := newClient(t, openAIProvider("p", s, policy()))
		req := hello()
		req.MaxTokens = 500
		req.Reasoning = &providers.Reasoning{Effort: "low"}
		resp, err := c.Chat(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Usage.ReasoningTokens == 0 || resp.Usage.OutputTokens <= resp.Usage.ReasoningTokens {
			t.Fatalf("usage %+v", resp.Usage)
		}
		b := lastBody(t, s)
		if b["reasoning_effort"] != "low" || b["max_completion_tokens"] != float64(500) || b["max_tokens"] != nil {
			t.Fatalf("body %v", b)
		}
	})
}

func TestFullRequest_PromptCaching(t *testing.T) {
	t.Run("anthropic", func(t *testing.T) {
		s := mocks.NewServer()
		defer s.Close()
		c := newClient(t, anthropicProvider("p", s, policy()))
		req := &providers.ChatRequest{
			Messages: []providers.Message{
				{Role: providers.RoleSystem, Content: strings.Repeat("You are a careful assistant. ", 100), Cache: providers.Cache1h},
				{Role: providers.RoleUser, Content: "hello", Cache: providers.CacheDefault},
			},
			Tools: []providers.Tool{{Name: "search", Cache: providers.Cache5m}},
		}
		first, err := c.Chat(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		second, err := c.Chat(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if first.Usage.CacheWriteInputTokens == 0 || first.Usage.CachedInputTokens != 0 ||
			second.Usage.CachedInputTokens == 0 || second.Usage.InputTokens != first.Usage.InputTokens {
			t.Fatalf("usage first %+v, second %+v", first.Usage, second.Usage)
		}
		b := lastBody(t, s)
		if at(b, "system", 0, "cache_control", "ttl") != "1h" || at(b, "messages", 0, "content", 0, "cache_control", "type") != "ephemeral" ||
			at(b, "tools", 0, "cache_control", "ttl") != "5m" {
			t.Fatalf("cache_control: system %v, messages %v, tools %v", b["system"], b["messages"], b["tools"])
		}
	})
	t.Run("openai", func(t *testing.T) {
		s := mocks.NewServer()
		defer s.Close()
		c := newClient(t, openAIProvider("p", s, policy()))
		req := &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: strings.Repeat("long prompt ", 500)}}}
		for i := range 2 {
			resp, err := c.Chat(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if cached := resp.Usage.CachedInputTokens; (i == 0) != (cached == 0) || cached > resp.Usage.InputTokens {
				t.Fatalf("call %d: usage %+v", i, resp.Usage)
			}
		}
	})
}

func TestFullRequest_RateLimitOnErrors(t *testing.T) {
	for _, k := range wireKinds {
		t.Run(k.name, func(t *testing.T) {
			s := mocks.NewServer(mocks.WithScript(mocks.RateLimited(0).Always()))
			defer s.Close()
			c := newClient(t, k.add(s))
			_, err := c.Chat(context.Background(), hello())
			var e *providers.Error
			if !errors.As(err, &e) || e.Kind != providers.KindRateLimited || e.RateLimit == nil || e.RateLimit.Requests.Limit == 0 {
				t.Fatalf("error %v with rate limit %+v", err, e)
			}
		})
	}
}

// A request that needs what no provider of the chain has is refused before anything is sent.
func TestFullRequest_CapabilitiesRefuseBeforeSending(t *testing.T) {
	calls := 0
	c := newClient(t, client.WithProvider("plain", policy(), func(hc *http.Client) (providers.Provider, error) {
		return textOnly{&calls}, nil
	}))
	req := hello()
	req.Reasoning = &providers.Reasoning{Effort: "high"}
	_, err := c.Chat(context.Background(), req)
	if !isKind(err, providers.KindBadRequest) || !strings.Contains(err.Error(), "reasoning") || calls != 0 {
		t.Fatalf("%v (%d calls)", err, calls)
	}
}

// textOnly is a provider that can only chat in text.
type textOnly struct{ calls *int }

func (textOnly) Name() string { return "plain" }
func (p textOnly) Chat(context.Context, *providers.ChatRequest) (*providers.ChatResponse, error) {
	*p.calls++
	return &providers.ChatResponse{}, nil
}
func (textOnly) ChatStream(context.Context, *providers.ChatRequest) (providers.Stream, error) {
	return nil, io.EOF
}
func (textOnly) Embed(context.Context, *providers.EmbedRequest) (*providers.EmbedResponse, error) {
	return nil, io.EOF
}
func (textOnly) Describe() providers.Description {
	return providers.Description{Capabilities: providers.CapChat}
}

func isKind(err error, k providers.ErrorKind) bool {
	var e *providers.Error
	return errors.As(err, &e) && e.Kind == k
}
