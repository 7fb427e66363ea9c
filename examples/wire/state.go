package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// The parts of the example about provider state: what only the provider that made it can read
// (a stored answer, a conversation, a compaction item, a server tool's blocks), and what a
// fallback does with it. Each part has fakes of its own, so that it can take one down.

// responsesAt and claudeAt are the factories of providers on fake's two APIs.
func responsesAt(fake *mocks.Server) client.ProviderFactory {
	return func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: "openai", API: openai.Responses, BaseURL: fake.OpenAIBaseURL(),
			APIKey: "sk-example", HTTPClient: hc, Model: "gpt-5"})
	}
}

func claudeAt(fake *mocks.Server) client.ProviderFactory {
	return func(hc *http.Client) (providers.Provider, error) {
		return anthropic.New(anthropic.Config{Name: "claude", BaseURL: fake.AnthropicBaseURL(), APIKey: "sk-ant-example",
			HTTPClient: hc, Model: "claude-sonnet-4-5"})
	}
}

// noRetries is the policy of a provider the example takes down: it fails at once.
func noRetries() resilience.Options {
	o := resilience.DefaultOptions()
	o.RetryCount = 0
	return o
}

// gone streams a background answer whose connection breaks and which the server no longer
// holds when the stream comes back for the rest, first as by default, then opting in to a
// restart.
func gone(ctx context.Context, out io.Writer, _ *mocks.Server) error {
	fake := mocks.NewServer(mocks.WithRouteScript(mocks.RouteResponses,
		mocks.Step{Text: "one two three four five six", Cut: mocks.CutAbort, CutAfter: 7, Expire: true},
		mocks.Step{Text: "one two three four five six", Cut: mocks.CutAbort, CutAfter: 7, Expire: true},
		mocks.Reply("a new answer")))
	defer fake.Close()
	other := mocks.NewServer()
	defer other.Close()
	c, err := client.New(client.WithProvider("openai", resilience.DefaultOptions(), responsesAt(fake)),
		client.WithProvider("claude", resilience.DefaultOptions(), claudeAt(other)), client.WithFallback("openai", "claude"))
	if err != nil {
		return err
	}
	defer c.Close()
	req := &providers.ChatRequest{Background: true, Messages: []providers.Message{{Role: providers.RoleUser, Content: "Count to six."}}}
	restarts := 0
	read := func(opts ...client.CallOption) (string, error) {
		st, err := c.ChatStream(ctx, req, opts...)
		if err != nil {
			return "", err
		}
		defer st.Close()
		var text strings.Builder
		for d, err := range st.Deltas() {
			if err != nil {
				return text.String(), err
			}
			if d.Restart { // a new answer from the start: drop what came before
				restarts++
				text.Reset()
			}
			text.WriteString(d.Text)
		}
		return text.String(), nil
	}

	// docs:begin gone
	// read streams req (Background: true) to its end. The connection breaks after "one two
	// three"; the stream resumes with GET /responses/{id}?stream=true…, which is a 404.
	_, err = read()
	var e *providers.Error
	if errors.Is(err, providers.ErrResponseGone) && errors.As(err, &e) {
		// Produced and billed where it is gone: nothing was asked again, here or elsewhere.
		fmt.Fprintf(out, "gone: %s after %q; ", e.Kind, e.Partial)
	}
	text, err := read(client.WithRestartIfGone()) // asking again is the caller's decision
	// docs:end gone
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "with WithRestartIfGone, %d restart then %q; claude asked %d times\n", restarts, text,
		other.Journal().Len())
	return nil
}

// conversation keeps a conversation with the provider: each turn sends only its new message.
func conversation(ctx context.Context, out io.Writer, _ *mocks.Server) error {
	fake := mocks.NewServer(mocks.WithReply("Noted."))
	defer fake.Close()
	c, err := client.New(client.WithProvider("openai", resilience.DefaultOptions(), responsesAt(fake)))
	if err != nil {
		return err
	}
	defer c.Close()
	var prompts []int
	// docs:begin conversation
	conv, err := c.NewConversation(ctx, "") // on the first provider of the chain that keeps them
	if err != nil {
		return err
	}
	for _, say := range []string{"My name is Ada.", "What is my name?"} {
		resp, err := c.Chat(ctx, &providers.ChatRequest{Conversation: conv, // pinned to where it is kept
			Messages: []providers.Message{{Role: providers.RoleUser, Content: say}}}) // only the new message
		if err != nil {
			return err
		}
		prompts = append(prompts, resp.Usage.InputTokens) // the conversation's items count too
	}
	// docs:end conversation
	fmt.Fprintf(out, "conversation: prompts of %v tokens, the second turn reading the first\n", prompts)
	return nil
}

// compaction has OpenAI compact a long conversation, then takes OpenAI down: the whole
// transcript falls back to Claude, the pruned one cannot.
func compaction(ctx context.Context, out io.Writer, _ *mocks.Server) error {
	openaiFake, claudeFake := mocks.NewServer(mocks.WithReply("Noted.")), mocks.NewServer(mocks.WithReply("Claude here."))
	defer openaiFake.Close()
	defer claudeFake.Close()
	c, err := client.New(client.WithProvider("openai", noRetries(), responsesAt(openaiFake)),
		client.WithProvider("claude", resilience.DefaultOptions(), claudeAt(claudeFake)), client.WithFallback("openai", "claude"))
	if err != nil {
		return err
	}
	defer c.Close()
	history := strings.Repeat("Yesterday's meeting went on about the budget. ", 20)
	// docs:begin compaction
	conversation := []providers.Message{{Role: providers.RoleUser, Content: history}}
	resp, err := c.Chat(ctx, &providers.ChatRequest{Messages: conversation, CompactThreshold: 100})
	if err != nil {
		return err
	}
	// resp.Message.Compaction: the item (ID, Encrypted), stamped with the Origin that made it.
	conversation = append(conversation, resp.Message, providers.Message{Role: providers.RoleUser, Content: "And then?"})
	// docs:end compaction
	fmt.Fprintf(out, "compaction: an item came back: %v; ", resp.Message.Compaction != nil)

	openaiFake.RouteScript(mocks.RouteResponses, mocks.Status(503).Always()) // OpenAI goes down
	// docs:begin compaction-fallback
	// The whole transcript: Claude gets every message, without OpenAI's item.
	resp, err = c.Chat(ctx, &providers.ChatRequest{Messages: conversation})
	if err != nil {
		return err
	}
	// Pruned at the item (small requests): only OpenAI holds what the item stands for.
	_, err = c.Chat(ctx, &providers.ChatRequest{Messages: providers.PruneCompacted(conversation)})
	// err: openai's 503, "…; not sent elsewhere: the call continues from the compaction item …"
	// docs:end compaction-fallback
	var e *providers.Error
	if !errors.As(err, &e) {
		return fmt.Errorf("the pruned conversation was served: %v", err)
	}
	fmt.Fprintf(out, "OpenAI down: the whole transcript served by %s; the pruned one failed (%s %s), not sent elsewhere: %v\n",
		resp.Provider, e.Provider, e.Kind, strings.Contains(e.Message, "not sent elsewhere"))
	return nil
}

// serverTools gives Anthropic a web search and a bash tool by their versioned types: the call
// goes to Claude alone, and the search's blocks go back with the next turn.
func serverTools(ctx context.Context, out io.Writer, _ *mocks.Server) error {
	openaiFake, claudeFake := mocks.NewServer(), mocks.NewServer()
	defer openaiFake.Close()
	defer claudeFake.Close()
	c, err := client.New(client.WithProvider("openai", resilience.DefaultOptions(), responsesAt(openaiFake)),
		client.WithProvider("claude", resilience.DefaultOptions(), claudeAt(claudeFake)), client.WithFallback("openai", "claude"))
	if err != nil {
		return err
	}
	defer c.Close()
	weather := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)
	// docs:begin server-tools
	req := &providers.ChatRequest{
		Tools: []providers.Tool{
			{System: providers.SystemAnthropic, // a server tool: Anthropic runs the search
				Raw: json.RawMessage(`{"type":"web_search_20250305","name":"web_search","max_uses":5}`)},
			{System: providers.SystemAnthropic, // a client tool defined by its type: you run it
				Raw: json.RawMessage(`{"type":"bash_20250124","name":"bash"}`)},
			{Name: "get_weather", Parameters: weather}, // function tools mix freely
		},
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "What changed in Go 1.26?"}},
	}
	resp, err := c.Chat(ctx, req) // to Anthropic providers only: openai is skipped
	if err != nil {
		return err
	}
	var kept []string
	for _, b := range resp.Message.ProviderBlocks { // verbatim, each where it stood
		kept = append(kept, b.Type)
	}
	// The next turn: the blocks go back with the message, to this endpoint only.
	req.Messages = append(req.Messages, resp.Message, providers.Message{Role: providers.RoleUser, Content: "And 1.25?"})
	_, err = c.Chat(ctx, req)
	// docs:end server-tools
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "server tools: served by %s (openai asked %d times); kept %s\n", resp.Provider,
		openaiFake.Journal().Len(), strings.Join(kept, ", "))
	return nil
}
