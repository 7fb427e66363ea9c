package interop

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/steadyllm/steady/providers"
)

// These tests get a second, independent opinion on the wire formats. @copilotkit/aimock is a
// mock written by other people from their own reading of the OpenAI and Anthropic APIs; the
// tests run steady's providers against it and check that every answer reads as the fixture
// wrote it, in every wire format (chat completions, Messages, Responses), and that aimock
// reads steady's requests as they were meant. The harness is in aimock_helpers_test.go.

// aimockChunk is the number of characters per streamed delta: small, so that every answer
// arrives in several pieces.
const aimockChunk = 7

// aimockAnswer is an answer aimock gives in either wire format, and what steady must read.
type aimockAnswer struct {
	name   string
	ask    string // the user message that selects the answer
	text   string
	calls  []providers.ToolCall
	finish providers.FinishReason
	usage  providers.Usage
	// finishOverride is the fixture's finish reason, in OpenAI's words, which aimock
	// translates for Anthropic ("length" becomes "max_tokens"); "" keeps its default.
	finishOverride string
}

var aimockAnswers = []aimockAnswer{
	{name: "text", ask: "What is the capital of France?", text: "The capital of France is Paris.",
		finish: providers.FinishStop, usage: providers.Usage{InputTokens: 14, OutputTokens: 8}},
	{name: "max tokens", ask: "Tell me a long story", text: "Once upon a time, in a",
		finish: providers.FinishLength, usage: providers.Usage{InputTokens: 6, OutputTokens: 16}, finishOverride: "length"},
	{name: "text and two tool calls", ask: "Weather in Paris and Lyon?", text: "Let me check both cities.",
		calls: []providers.ToolCall{
			{ID: "call_wx_paris", Name: "get_weather", Arguments: `{"city":"Paris","days":2}`},
			{ID: "call_wx_lyon", Name: "get_weather", Arguments: `{"city":"Lyon","days":1}`},
		},
		finish: providers.FinishToolCalls, usage: providers.Usage{InputTokens: 31, OutputTokens: 24}},
}

func (w aimockAnswer) fixture() fixture {
	resp := obj{"content": w.text,
		"usage": obj{"prompt_tokens": w.usage.InputTokens, "completion_tokens": w.usage.OutputTokens}}
	for _, c := range w.calls {
		calls, _ := resp["toolCalls"].([]obj)
		resp["toolCalls"] = append(calls, obj{"id": c.ID, "name": c.Name, "arguments": c.Arguments})
	}
	if w.finishOverride != "" {
		resp["finishReason"] = w.finishOverride
	}
	return fixture{Match: obj{"userMessage": w.ask}, Response: resp, ChunkSize: aimockChunk}
}

func aimockAnswerFixtures() []fixture {
	var fs []fixture
	for _, w := range aimockAnswers {
		fs = append(fs, w.fixture())
	}
	return fs
}

// ask is a one-message request that offers the weather tool.
func ask(question string) *providers.ChatRequest {
	return &providers.ChatRequest{
		Messages: []providers.Message{{Role: providers.RoleUser, Content: question}},
		Tools: []providers.Tool{{Name: "get_weather", Description: "Weather forecast for a city",
			Parameters: json.RawMessage(weatherSchema)}},
	}
}

func TestAimock_ChatReadsTheSameAnswerInBothWireFormats(t *testing.T) {
	a := startAimock(t, aimockAnswerFixtures()...)
	for _, wf := range wireFormats {
		for _, want := range aimockAnswers {
			t.Run(wf.name+"/"+want.name, func(t *testing.T) {
				resp, err := a.provider(t, wf).Chat(t.Context(), ask(want.ask))
				if err != nil {
					t.Fatal(err)
				}
				m := resp.Message
				if m.Role != providers.RoleAssistant || m.Content != want.text || !slices.Equal(m.ToolCalls, want.calls) {
					t.Errorf("message %+v, want %q with calls %+v", m, want.text, want.calls)
				}
				if resp.FinishReason != want.finish || resp.Usage != want.usage {
					t.Errorf("finish %q usage %+v, want %q %+v", resp.FinishReason, resp.Usage, want.finish, want.usage)
				}
				if resp.Model != wf.model || resp.ID == "" || !strings.HasPrefix(resp.RequestID, "req-") {
					t.Errorf("model %q id %q request id %q", resp.Model, resp.ID, resp.RequestID)
				}
			})
		}
	}
}

func TestAimock_StreamReadsTheSameAnswerInBothWireFormats(t *testing.T) {
	a := startAimock(t, aimockAnswerFixtures()...)
	for _, wf := range wireFormats {
		for _, want := range aimockAnswers {
			t.Run(wf.name+"/"+want.name, func(t *testing.T) {
				st, err := a.provider(t, wf).ChatStream(t.Context(), ask(want.ask))
				if err != nil {
					t.Fatal(err)
				}
				got, err := readStream(st)
				if err != nil {
					t.Fatal(err)
				}
				if got.text != want.text || !slices.Equal(got.calls, want.calls) {
					t.Errorf("read %q with calls %+v, want %q with %+v", got.text, got.calls, want.text, want.calls)
				}
				if n := (len(want.text) + aimockChunk - 1) / aimockChunk; got.textDeltas != n {
					t.Errorf("text came in %d deltas, want one per %d-character chunk: %d", got.textDeltas, aimockChunk, n)
				}
				if d := got.done; !d.Done || d.FinishReason != want.finish || d.Usage != want.usage {
					t.Errorf("last delta %+v, want Done with %q and %+v", d, want.finish, want.usage)
				}
			})
		}
	}
}

// streamed is what readStream makes of a stream.
type streamed struct {
	text       string
	textDeltas int
	calls      []providers.ToolCall // assembled from their fragments
	done       providers.Delta
}

// readStream reads st to its end, or its failure, and closes it. A tool call's first fragment
// must carry its ID and Name, and calls must be numbered from 0 in order.
func readStream(st providers.Stream) (streamed, error) {
	defer st.Close()
	var s streamed
	var text strings.Builder
	for {
		d, err := st.Recv()
		s.text = text.String()
		if errors.Is(err, io.EOF) {
			return s, nil
		}
		if err != nil {
			return s, err
		}
		if d.Text != "" {
			text.WriteString(d.Text)
			s.text = text.String()
			s.textDeltas++
		}
		for _, tc := range d.ToolCalls {
			switch {
			case tc.Index == len(s.calls) && tc.ID != "" && tc.Name != "":
				s.calls = append(s.calls, providers.ToolCall{ID: tc.ID, Name: tc.Name})
			case tc.Index != len(s.calls)-1 || tc.ID != "" || tc.Name != "":
				return s, fmt.Errorf("tool call fragment %+v out of order after %d calls", tc, len(s.calls))
			}
			s.calls[tc.Index].Arguments += tc.Arguments
		}
		if d.Done {
			s.done = d
		}
	}
}

func TestAimock_EmbedReadsVectorsInInputOrder(t *testing.T) {
	a := startAimock(t, fixture{Match: obj{"inputText": "steady embeds this"},
		Response: obj{"embedding": []float64{0.25, -0.5, 0.75}}})
	openai := a.provider(t, wireFormats[0])

	resp, err := openai.Embed(t.Context(), &providers.EmbedRequest{Model: "text-embedding-3-small", Inputs: []string{"steady embeds this"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Embeddings) != 1 || !slices.Equal(resp.Embeddings[0], []float32{0.25, -0.5, 0.75}) || resp.Model != "text-embedding-3-small" {
		t.Errorf("fixture embedding: %+v", resp)
	}

	// Inputs that no fixture matches get aimock's own vectors, derived from each input: they
	// prove that each vector lands at its input's place.
	inputs := []string{"first input", "second input", "third input"}
	resp, err = openai.Embed(t.Context(), &providers.EmbedRequest{Model: "text-embedding-3-small", Inputs: inputs})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Embeddings) != len(inputs) {
		t.Fatalf("%d embeddings for %d inputs", len(resp.Embeddings), len(inputs))
	}
	for i, in := range inputs {
		if want := aimockFallbackEmbedding(in, 1536); !closeTo(resp.Embeddings[i], want) {
			t.Errorf("embedding %d (%q) starts %v, want %v", i, in, resp.Embeddings[i][:4], want[:4])
		}
	}

	_, err = a.provider(t, wireFormats[1]).Embed(t.Context(), &providers.EmbedRequest{Model: "any", Inputs: inputs})
	if providers.KindOf(err) != providers.KindBadRequest {
		t.Errorf("Anthropic embed: %v, want a bad request (it has no embeddings API)", err)
	}
	if n := len(a.journal(t, "/v1/embeddings")); n != 2 {
		t.Errorf("aimock saw %d embedding requests, want 2 (none from Anthropic)", n)
	}
}

// aimockFallbackEmbedding is the vector aimock gives an input no fixture matches
// (generateDeterministicEmbedding in its helpers.js): the bytes of SHA-256(input), then of the
// SHA-256 of the previous hash for each next 32 dimensions, each byte b as b/127.5 - 1.
func aimockFallbackEmbedding(input string, dims int) []float32 {
	h := sha256.Sum256([]byte(input))
	v := make([]float32, dims)
	for i := range v {
		if i > 0 && i%32 == 0 {
			h = sha256.Sum256(h[:])
		}
		v[i] = float32(float64(h[i%32])/127.5 - 1)
	}
	return v
}

// closeTo compares vectors to float32 precision: the JSON numbers are float64 renderings.
func closeTo(got, want []float32) bool {
	return slices.EqualFunc(got, want, func(a, b float32) bool { return math.Abs(float64(a-b)) < 1e-6 })
}

// A tool round trip, sent by both providers: aimock serves the fixture only if it read the
// system prompt, the tool, the tool call and its result where steady put them, and its journal
// shows the conversation as it understood it.
func TestAimock_ReadsTheToolRoundTripAsSent(t *testing.T) {
	a := startAimock(t, fixture{
		Match: obj{"userMessage": "Weather in Paris for 2 days?", "systemMessage": "You are a terse weather bot.",
			"toolName": "get_weather", "toolCallId": "toolu_01", "toolResultContains": "Sunny, 21°C"},
		Response: obj{"content": "Sunny, then rain."},
	})
	want := []string{
		"system: You are a terse weather bot.",
		"user: Weather in Paris for 2 days?",
		`assistant: Checking. get_weather#toolu_01{"city":"Paris","days":2}`,
		"tool toolu_01: Sunny, 21°C then rain",
		"offers get_weather: " + compactJSON(t, []byte(weatherSchema)),
		"temperature 0.3",
	}
	for _, wf := range wireFormats {
		t.Run(wf.name, func(t *testing.T) {
			req := neutralConversation()
			req.Model = wf.model
			req.Messages = req.Messages[:4] // it ends with the tool result
			if wf.name == "responses" {
				req.Stop = nil // the Responses API has no stop sequences
			}
			resp, err := a.provider(t, wf).Chat(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Content != "Sunny, then rain." {
				t.Errorf("content %q", resp.Message.Content)
			}
			entries := a.journal(t, pathOf(wf))
			if len(entries) != 1 {
				t.Fatalf("%d requests on %s, want 1", len(entries), pathOf(wf))
			}
			want := want
			if wf.name == "responses" {
				// Responses items: the assistant's text and its call are items of their own.
				want = slices.Concat(want[:2], []string{"assistant: Checking.", `assistant: get_weather#toolu_01{"city":"Paris","days":2}`}, want[3:])
			}
			if got := conversationAsRead(t, entries[0].Body); !slices.Equal(got, want) {
				t.Errorf("aimock read\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			// aimock accepted the key (it checks AIMOCK_API_KEYS) and journals it redacted:
			// the header it came in is what remains to check.
			h := entries[0].Headers
			keyHeader, otherHeader := "authorization", "x-api-key"
			if wf.name == "anthropic" {
				keyHeader, otherHeader = otherHeader, keyHeader
			}
			if h[keyHeader] == "" || h[otherHeader] != "" {
				t.Errorf("the key came in %v, want %s alone", h, keyHeader)
			}
			if wf.name == "anthropic" && h["anthropic-version"] != "2023-06-01" {
				t.Errorf("anthropic-version %q", h["anthropic-version"])
			}
		})
	}
}

// conversationAsRead lists, one line per fact, a chat-completions request body as aimock
// journals it: the raw body for OpenAI, aimock's translation of the Messages body for Anthropic.
func conversationAsRead(t *testing.T, body []byte) []string {
	t.Helper()
	var b struct {
		Messages []struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
		Temperature float64 `json:"temperature"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("journal body: %v\n%s", err, body)
	}
	var facts []string
	for _, m := range b.Messages {
		line := m.Role
		if m.ToolCallID != "" {
			line += " " + m.ToolCallID
		}
		line += ":"
		if m.Content != nil {
			line += " " + *m.Content
		}
		for _, tc := range m.ToolCalls {
			line += fmt.Sprintf(" %s#%s%s", tc.Function.Name, tc.ID, tc.Function.Arguments)
		}
		facts = append(facts, line)
	}
	for _, tool := range b.Tools {
		facts = append(facts, "offers "+tool.Function.Name+": "+compactJSON(t, tool.Function.Parameters))
	}
	return append(facts, fmt.Sprintf("temperature %g", b.Temperature))
}

// compactJSON renders a JSON value with sorted keys and no spaces.
func compactJSON(t *testing.T, data []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out.String())
}
