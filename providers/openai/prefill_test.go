package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
)

func prefilled(text string) *providers.ChatRequest {
	return &providers.ChatRequest{Prefill: true, Messages: []providers.Message{
		{Role: providers.RoleUser, Content: "Count"}, {Role: providers.RoleAssistant, Content: text}}}
}

// A server that declares a prefill flavour gets the request marked in that flavour — "prefix":
// true on the last message, or continue_final_message with add_generation_prompt false — and
// answers the rest; the body is otherwise as go-openai wrote it.
func TestPrefill_MarksTheRequestInTheDeclaredFlavour(t *testing.T) {
	for _, f := range []openai.PrefillFlavor{openai.PrefillPrefix, openai.PrefillContinueFinal} {
		t.Run(string(f), func(t *testing.T) {
			s := mocks.NewServer(mocks.WithAPIKey(sentinel), mocks.WithReply("one two three four"))
			defer s.Close()
			p := newProvider(t, s, func(c *openai.Config) { c.Dialect, c.Prefill = openai.Compatible, f })
			if !p.Prefills("any", prefilled("one two")) {
				t.Fatal("Prefills is false with a flavour declared")
			}
			for _, stream := range []bool{false, true} {
				var text string
				if stream {
					st, err := p.ChatStream(context.Background(), prefilled("one two"))
					if err != nil {
						t.Fatal(err)
					}
					var b strings.Builder
					for {
						d, err := st.Recv()
						if err != nil {
							break
						}
						b.WriteString(d.Text)
					}
					_ = st.Close()
					text = b.String()
				} else {
					resp, err := p.Chat(context.Background(), prefilled("one two"))
					if err != nil {
						t.Fatal(err)
					}
					text = resp.Message.Content
				}
				if text != " three four" {
					t.Fatalf("stream %v: %q, want the rest of the answer", stream, text)
				}
				req, _ := s.Journal().Last()
				var body struct {
					Model    string `json:"model"`
					Messages []struct {
						Role    string `json:"role"`
						Content string `json:"content"`
						Prefix  *bool  `json:"prefix"`
					} `json:"messages"`
					ContinueFinal *bool `json:"continue_final_message"`
					AddGeneration *bool `json:"add_generation_prompt"`
				}
				if err := json.Unmarshal(req.Body, &body); err != nil {
					t.Fatal(err)
				}
				last := body.Messages[len(body.Messages)-1]
				marked := last.Prefix != nil && *last.Prefix && body.ContinueFinal == nil
				if f == openai.PrefillContinueFinal {
					marked = last.Prefix == nil && body.ContinueFinal != nil && *body.ContinueFinal &&
						body.AddGeneration != nil && !*body.AddGeneration
				}
				if !marked || body.Model != "gpt-4o-mini" || last.Content != "one two" || body.Messages[0].Prefix != nil {
					t.Fatalf("body %s", req.Body)
				}
			}
		})
	}
}

// OpenAI and Azure have no prefill: a prefilled request is refused before sending, with the
// code that says another route may continue it, and the flavour is validated.
func TestPrefill_WithoutAFlavourIsRefusedBeforeSending(t *testing.T) {
	s := mocks.NewServer(mocks.WithAPIKey(sentinel))
	defer s.Close()
	for _, api := range []openai.API{openai.ChatCompletions, openai.Responses} {
		p := newProvider(t, s, func(c *openai.Config) { c.API = api })
		if p.Prefills("gpt-4o", prefilled("one")) {
			t.Fatalf("%s: Prefills is true", api)
		}
		_, err := p.ChatStream(context.Background(), prefilled("one"))
		var e *providers.Error
		if !errors.As(err, &e) || e.Kind != providers.KindBadRequest || !errors.Is(err, providers.ErrPrefillUnsupported) {
			t.Fatalf("%s: %v", api, err)
		}
		if _, err := p.Chat(context.Background(), prefilled("one")); !errors.Is(err, providers.ErrPrefillUnsupported) {
			t.Fatalf("%s: Chat: %v", api, err)
		}
	}
	if n := s.Journal().Len(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
	if _, err := openai.New(openai.Config{APIKey: "k", Prefill: "assistant"}); err == nil {
		t.Fatal("an unknown flavour was accepted")
	}
}
