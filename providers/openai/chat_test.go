package openai_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

func TestChat_ReturnsContentUsageFinishAndRequestID(t *testing.T) {
	s := newServer(t, mocks.Reply("Hello there, world!"))
	p := newProvider(t, s)

	resp, err := p.Chat(context.Background(), ask("Hi"))
	if err != nil {
		t.Fatal(err)
	}
	want := providers.ChatResponse{
		Provider:     "openai",
		Model:        "gpt-4o-mini",
		ID:           resp.ID,
		Message:      providers.Message{Role: providers.RoleAssistant, Content: "Hello there, world!"},
		FinishReason: providers.FinishStop,
		Usage:        providers.Usage{InputTokens: mocks.Tokens("Hi"), OutputTokens: mocks.Tokens("Hello there, world!")},
		RequestID:    "req-00000000000000000001",
		RateLimit:    resp.RateLimit, // checked below
	}
	if rl := resp.RateLimit; rl == nil || rl.Requests.Limit == 0 || rl.Tokens.Reset.IsZero() {
		t.Fatalf("rate limit %+v, want the fake server's headers", rl)
	}
	if resp.ID == "" || !equalJSON(*resp, want) {
		t.Fatalf("got  %+v\nwant %+v", *resp, want)
	}
	r, _ := s.Journal().Last()
	if r.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "REDACTED" {
		t.Fatalf("request %s with Authorization %q", r.Path, r.Header.Get("Authorization"))
	}
}

func TestChat_MapsToolsAndToolCalls(t *testing.T) {
	s := newServer(t, mocks.CallTool("get_weather", `{"city":"Paris"}`))
	p := newProvider(t, s)
	req := &providers.ChatRequest{
		Messages: []providers.Message{
			{Role: providers.RoleSystem, Content: "Be brief."},
			{Role: providers.RoleUser, Content: "Weather in Paris?"},
			{Role: providers.RoleAssistant, ToolCalls: []providers.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Rome"}`}}},
			{Role: providers.RoleTool, ToolCallID: "call_1", Content: "sunny"},
		},
		Tools: []providers.Tool{
			{Name: "get_weather", Description: "Current weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
			{Name: "now"},
		},
	}
	resp, err := p.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != providers.FinishToolCalls || len(resp.Message.ToolCalls) != 1 {
		t.Fatalf("finish %q, tool calls %+v", resp.FinishReason, resp.Message.ToolCalls)
	}
	if tc := resp.Message.ToolCalls[0]; tc.ID == "" || tc.Name != "get_weather" || tc.Arguments != `{"city":"Paris"}` {
		t.Fatalf("tool call %+v", tc)
	}

	var sent struct {
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct{ Name, Arguments string }
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(lastBody(t, s)), &sent); err != nil {
		t.Fatal(err)
	}
	roles := []string{}
	for _, m := range sent.Messages {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool" || sent.Messages[3].ToolCallID != "call_1" {
		t.Fatalf("messages sent: %+v", sent.Messages)
	}
	if tc := sent.Messages[2].ToolCalls; len(tc) != 1 || tc[0].ID != "call_1" || tc[0].Type != "function" ||
		tc[0].Function.Name != "get_weather" || tc[0].Function.Arguments != `{"city":"Rome"}` {
		t.Fatalf("assistant tool calls sent: %+v", tc)
	}
	if len(sent.Tools) != 2 || sent.Tools[0].Type != "function" || sent.Tools[1].Function.Name != "now" ||
		string(sent.Tools[1].Function.Parameters) != `{"type":"object","properties":{}}` {
		t.Fatalf("tools sent: %+v", sent.Tools)
	}
}

func TestChat_SendsParameters(t *testing.T) {
	zero, topP := 0.0, 0.5
	tests := []struct {
		name  string
		kind  openai.Dialect
		model string
		want  []string // substrings of the request body
		not   []string
	}{
		{"openai uses max_completion_tokens", openai.OpenAI, "gpt-4o-mini",
			[]string{`"max_completion_tokens":7`}, []string{`"max_tokens"`}},
		{"compatible uses max_tokens", openai.Compatible, "llama3.2",
			[]string{`"max_tokens":7`}, []string{`"max_completion_tokens"`}},
		{"compatible reasoning model uses max_completion_tokens", openai.Compatible, "gpt-5-mini",
			[]string{`"max_completion_tokens":7`}, []string{`"max_tokens"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			p := newProvider(t, s, func(c *openai.Config) { c.Dialect = tt.kind; c.Model = tt.model })
			req := ask("Hi")
			req.MaxTokens = 7
			if !strings.HasPrefix(tt.model, "gpt-5") { // reasoning models refuse sampling parameters
				req.Temperature, req.TopP = &zero, &topP
				tt.want = append(tt.want, `"temperature":1e-45`, `"top_p":0.5`)
			}
			req.Stop = []string{"END"}
			req.Format = providers.FormatJSON
			if _, err := p.Chat(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			body := lastBody(t, s)
			for _, w := range append(tt.want, `"stop":["END"]`, `"response_format":{"type":"json_object"}`, `"model":"`+tt.model+`"`) {
				if !strings.Contains(body, w) {
					t.Errorf("body lacks %s: %s", w, body)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(body, n) {
					t.Errorf("body has %s: %s", n, body)
				}
			}
		})
	}
}

func TestChat_CompatibleBaseURL(t *testing.T) {
	s := mocks.NewServer() // accepts any key
	defer s.Close()
	p, err := openai.New(openai.Config{Name: "local", Dialect: openai.Compatible, BaseURL: s.OpenAIBaseURL() + "/",
		APIKey: "gw-key", Model: "my-org/custom-model:7b", HTTPClient: s.Client()})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Chat(context.Background(), ask("ping"))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := s.Journal().Last()
	if p.Name() != "local" || resp.Provider != "local" || resp.Model != "my-org/custom-model:7b" ||
		r.Path != "/v1/chat/completions" || r.Query != "" || resp.Message.Content != "ping" {
		t.Fatalf("provider %q, response %+v, request %s?%s", p.Name(), resp, r.Path, r.Query)
	}
}

func TestChat_AzureUsesDeploymentAPIKeyAndVersion(t *testing.T) {
	s := newServer(t, mocks.OK(), mocks.OK(), mocks.OK())
	cfg := openai.Config{Dialect: openai.Azure, BaseURL: s.URL() + "/openai", APIKey: sentinel, HTTPClient: s.Client(),
		Model: "gpt-4o", AzureDeployments: map[string]string{"gpt-4o": "prod-4o"}}
	p, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Chat(context.Background(), ask("Hi")); err != nil {
		t.Fatal(err)
	}
	req := ask("Hi")
	req.Model = "gpt-35-turbo" // unmapped: the model name is the deployment
	if _, err := p.Chat(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	cfg.APIVersion = "2025-01-01-preview"
	p, _ = openai.New(cfg)
	if _, err := p.Embed(context.Background(), &providers.EmbedRequest{Inputs: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"/openai/deployments/prod-4o/chat/completions?api-version=2024-10-21",
		"/openai/deployments/gpt-35-turbo/chat/completions?api-version=2024-10-21",
		"/openai/deployments/prod-4o/embeddings?api-version=2025-01-01-preview",
	}
	for i, r := range s.Journal().Requests() {
		if got := r.Path + "?" + r.Query; got != want[i] {
			t.Errorf("request %d: %s, want %s", i+1, got, want[i])
		}
		if r.Header.Get("Api-Key") != "REDACTED" || r.Header.Get("Authorization") != "" {
			t.Errorf("request %d: api-key %q, Authorization %q", i+1, r.Header.Get("Api-Key"), r.Header.Get("Authorization"))
		}
	}
}

func TestEmbed_ReturnsVectorsInOrderWithUsage(t *testing.T) {
	s := newServer(t)
	p := newProvider(t, s)
	inputs := []string{"alpha", "beta gamma"}
	resp, err := p.Embed(context.Background(), &providers.EmbedRequest{Model: "text-embedding-3-small", Inputs: inputs})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Provider != "openai" || resp.Model != "text-embedding-3-small" || len(resp.Embeddings) != 2 ||
		len(resp.Embeddings[0]) == 0 || resp.Usage.InputTokens != mocks.Tokens("alpha")+mocks.Tokens("beta gamma") {
		t.Fatalf("response %+v", resp)
	}
	if body := lastBody(t, s); !strings.Contains(body, `"input":["alpha","beta gamma"]`) || !strings.Contains(body, `"encoding_format":"float"`) {
		t.Fatalf("body %s", body)
	}
	if equalJSON(resp.Embeddings[0], resp.Embeddings[1]) {
		t.Fatal("both inputs got the same vector")
	}
}

func TestChat_RetriesThroughResiliencePipeline(t *testing.T) {
	s := newServer(t, mocks.Status(503), mocks.Reply("recovered"))
	opts := resilience.DefaultOptions()
	opts.RetryBaseDelaySeconds, opts.RetryMaxDelaySeconds, opts.RetryUseJitter = 0.001, 0.01, false
	pipe, err := resilience.New(opts, resilience.WithName("openai"))
	if err != nil {
		t.Fatal(err)
	}
	p := newProvider(t, s, func(c *openai.Config) {
		c.HTTPClient = &http.Client{Transport: pipe.Wrap(s.Client().Transport)}
	})
	resp, err := p.Chat(context.Background(), ask("Hi"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "recovered" || s.Journal().Len() != 2 {
		t.Fatalf("content %q after %d requests", resp.Message.Content, s.Journal().Len())
	}
}

func TestClient_ExposesGoOpenAIOnTheSameTransport(t *testing.T) {
	s := newServer(t)
	p := newProvider(t, s)
	models, err := p.Client().ListModels(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(models.Models) == 0 || s.Journal().Len() != 1 {
		t.Fatalf("%d models, %d requests", len(models.Models), s.Journal().Len())
	}
}

// equalJSON compares two values by their JSON encoding.
func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
