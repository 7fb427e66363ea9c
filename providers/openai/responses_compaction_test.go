package openai_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/providers/openai"
)

// longChat is a conversation long enough to pass a compaction threshold of 20 tokens.
func longChat() []providers.Message {
	return []providers.Message{
		{Role: providers.RoleSystem, Content: "Be brief."},
		{Role: providers.RoleUser, Content: strings.Repeat("tell me about the history of the city of Paris ", 8)},
	}
}

// Server-side compaction: CompactThreshold sends context_management; an answer whose prompt
// passed it carries the compaction item (its ID, encrypted content and this provider's Origin),
// first of the assistant's items, streamed or not. Sent back, the item goes before the rest of
// the assistant's turn — to its own provider only: another endpoint's is dropped when the
// conversation is whole, refused when it was pruned.
func TestResponses_CompactionItemsComeBackAndGoBackOnlyToTheirOrigin(t *testing.T) {
	s := newServer(t)
	p := responsesProvider(t, s)
	req := &providers.ChatRequest{Messages: longChat(), CompactThreshold: 20}
	resp, err := p.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	c := resp.Message.Compaction
	if c == nil || !strings.HasPrefix(c.ID, "cmp_") || c.Encrypted == "" || c.Origin != p.SharingScope() || c.Pruned {
		t.Fatalf("compaction %+v", c)
	}
	if cm := bodyOf(t, s)["context_management"]; !reflect.DeepEqual(cm, jsonOf(t, `[{"type":"compaction","compact_threshold":20}]`)) {
		t.Fatalf("context_management %v", cm)
	}
	whole := append(append(longChat(), resp.Message), providers.Message{Role: providers.RoleUser, Content: "And then?"})
	next := &providers.ChatRequest{Messages: whole}
	again, err := p.Chat(context.Background(), next)
	if err != nil {
		t.Fatal(err) // the fake refuses a compaction item it did not encrypt
	}
	in := bodyOf(t, s)["input"].([]any)
	want := jsonOf(t, fmt.Sprintf(`[{"type":"compaction","id":%q,"encrypted_content":%q},{"type":"message","role":"assistant","content":%q}]`,
		c.ID, c.Encrypted, resp.Message.Content))
	if !reflect.DeepEqual(in[2:4], want) {
		t.Fatalf("input %v", in)
	}
	// The item stands for what came before it: the prompt is smaller than the whole transcript's.
	foreign := *resp.Message.Compaction
	foreign.Origin = "another endpoint"
	without := append([]providers.Message(nil), whole...)
	without[2].Compaction = &foreign
	full, err := p.Chat(context.Background(), &providers.ChatRequest{Messages: without})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(lastBody(t, s), `"compaction"`) || again.Usage.InputTokens >= full.Usage.InputTokens {
		t.Fatalf("another endpoint's item was sent, or the item did not stand for the transcript (%d vs %d tokens)",
			again.Usage.InputTokens, full.Usage.InputTokens)
	}
	// Pruned, another endpoint's item cannot be dropped: the request is refused before sending.
	sent := s.Journal().Len()
	_, err = p.Chat(context.Background(), &providers.ChatRequest{Messages: providers.PruneCompacted(without)})
	if e := asError(t, err); e.Kind != providers.KindBadRequest || !strings.Contains(e.Message, "another provider") || s.Journal().Len() != sent {
		t.Fatalf("%v", err)
	}

	st, err := p.ChatStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	deltas, err := drain(t, st)
	if err != nil {
		t.Fatal(err)
	}
	done := deltas[len(deltas)-1]
	if !done.Done || done.Compaction == nil || !strings.HasPrefix(done.Compaction.ID, "cmp_") || done.Compaction.Encrypted == "" ||
		done.Compaction.Origin != p.SharingScope() {
		t.Fatalf("stream's done delta %+v", done)
	}
	// Below the threshold, nothing is compacted.
	short, err := p.Chat(context.Background(), &providers.ChatRequest{Messages: ask("hi").Messages, CompactThreshold: 1000})
	if err != nil || short.Message.Compaction != nil {
		t.Fatalf("%+v %v", short, err)
	}
}

// A pruned conversation (PruneCompacted) goes to the provider that made its compaction item,
// which reads it; the wires that keep no provider state refuse it, as they refuse a
// conversation, and ignore a compaction item while the transcript is whole.
func TestCompaction_OtherWiresDropOrRefuseIt(t *testing.T) {
	s := newServer(t)
	p := responsesProvider(t, s)
	resp, err := p.Chat(context.Background(), &providers.ChatRequest{Messages: longChat(), CompactThreshold: 20})
	if err != nil || resp.Message.Compaction == nil {
		t.Fatalf("%+v %v", resp, err)
	}
	whole := append(append(longChat(), resp.Message), providers.Message{Role: providers.RoleUser, Content: "And then?"})
	pruned := providers.PruneCompacted(whole)
	if _, err := p.Chat(context.Background(), &providers.ChatRequest{Messages: pruned}); err != nil {
		t.Fatalf("its own provider: %v", err)
	}
	chat := newProvider(t, s)
	claude, err := anthropic.New(anthropic.Config{BaseURL: s.AnthropicBaseURL(), APIKey: sentinel, HTTPClient: s.Client(), Model: "claude-haiku-4-5"})
	if err != nil {
		t.Fatal(err)
	}
	for name, pr := range map[string]providers.Provider{"chat completions": chat, "anthropic": claude} {
		if _, err := pr.Chat(context.Background(), &providers.ChatRequest{Messages: whole, MaxTokens: 100}); err != nil {
			t.Fatalf("%s, whole transcript: %v", name, err)
		}
		if body := lastBody(t, s); strings.Contains(body, resp.Message.Compaction.Encrypted) || strings.Contains(body, resp.Message.Compaction.ID) {
			t.Fatalf("%s got the compaction item:\n%s", name, body)
		}
		sent := s.Journal().Len()
		for what, req := range map[string]*providers.ChatRequest{
			"pruned":       {Messages: pruned, MaxTokens: 100},
			"conversation": {Messages: ask("hi").Messages, MaxTokens: 100, Conversation: &providers.Conversation{ID: "conv_1"}},
		} {
			_, err := pr.Chat(context.Background(), req)
			if e := asError(t, err); e.Kind != providers.KindBadRequest || !strings.Contains(e.Message, "send the whole conversation") {
				t.Fatalf("%s, %s: %v", name, what, err)
			}
		}
		if s.Journal().Len() != sent {
			t.Fatalf("%s sent a request it cannot serve", name)
		}
	}
}

// A conversation the provider keeps: NewConversation creates it with this provider's Origin,
// a call that names it sends conversation and gets it back, and the conversation holds the
// turns (the second call's prompt includes the first). One of another origin is refused before
// sending; one the server does not hold is gone (ErrConversationGone).
func TestResponses_ConversationsAreKeptByTheirProvider(t *testing.T) {
	s := newServer(t)
	p := responsesProvider(t, s)
	conv, err := p.NewConversation(context.Background())
	if err != nil || !strings.HasPrefix(conv.ID, "conv_") || conv.Origin != p.SharingScope() {
		t.Fatalf("%+v %v", conv, err)
	}
	if r, _ := s.Journal().Last(); r.Path != "/v1/conversations" {
		t.Fatalf("created at %s", r.Path)
	}
	first, err := p.Chat(context.Background(), &providers.ChatRequest{Messages: ask("My name is Ada.").Messages, Conversation: conv})
	if err != nil || first.Conversation == nil || *first.Conversation != *conv {
		t.Fatalf("%+v %v", first, err)
	}
	if got := bodyOf(t, s)["conversation"]; got != conv.ID {
		t.Fatalf("conversation %v", got)
	}
	st, err := p.ChatStream(context.Background(), &providers.ChatRequest{Messages: ask("What is my name?").Messages, Conversation: conv})
	if err != nil {
		t.Fatal(err)
	}
	deltas, err := drain(t, st)
	if err != nil {
		t.Fatal(err)
	}
	done := deltas[len(deltas)-1]
	if done.Conversation == nil || *done.Conversation != *conv || done.Usage.InputTokens <= first.Usage.InputTokens+first.Usage.OutputTokens {
		t.Fatalf("done %+v: the conversation's turns were not part of the prompt", done)
	}
	sent := s.Journal().Len()
	_, err = p.Chat(context.Background(), &providers.ChatRequest{Messages: ask("hi").Messages,
		Conversation: &providers.Conversation{ID: conv.ID, Origin: "another endpoint"}})
	if e := asError(t, err); e.Kind != providers.KindBadRequest || s.Journal().Len() != sent {
		t.Fatalf("another origin: %v", err)
	}
	if !s.Forget(conv.ID) {
		t.Fatal("the fake held no conversation")
	}
	_, err = p.Chat(context.Background(), &providers.ChatRequest{Messages: ask("hi").Messages, Conversation: conv})
	if e := asError(t, err); e.Kind != providers.KindNotFound || !errors.Is(err, providers.ErrConversationGone) || providers.Gone(err) != true {
		t.Fatalf("deleted: %v", err)
	}
	if _, err := newProvider(t, s).NewConversation(context.Background()); asError(t, err).Kind != providers.KindBadRequest {
		t.Fatalf("chat completions: %v", err)
	}
}

// The request's provider state is checked before anything is sent: a compaction item outside
// an assistant message or without its content, a negative threshold, Previous with
// Conversation, state from different providers.
func TestValidate_CompactionAndConversation(t *testing.T) {
	item := &providers.Compaction{ID: "cmp_1", Encrypted: "enc", Origin: "a"}
	for name, req := range map[string]*providers.ChatRequest{
		"on a user message": {Messages: []providers.Message{{Role: providers.RoleUser, Content: "x", Compaction: item}}},
		"no content": {Messages: []providers.Message{{Role: providers.RoleAssistant, Content: "x",
			Compaction: &providers.Compaction{ID: "cmp_1"}}, {Role: providers.RoleUser, Content: "y"}}},
		"negative threshold": {Messages: ask("x").Messages, CompactThreshold: -1},
		"previous and conversation": {Messages: ask("x").Messages, Previous: &providers.StoredResponse{ID: "resp_1"},
			Conversation: &providers.Conversation{ID: "conv_1"}},
		"conversation without ID": {Messages: ask("x").Messages, Conversation: &providers.Conversation{}},
		"origins differ": {Previous: &providers.StoredResponse{ID: "resp_1", Origin: "b"}, Messages: []providers.Message{
			{Role: providers.RoleAssistant, Content: "x", Compaction: &providers.Compaction{Encrypted: "e", Origin: "a", Pruned: true}},
			{Role: providers.RoleUser, Content: "y"}}},
	} {
		var e *providers.Error
		if err := req.Validate(); !errors.As(err, &e) || e.Kind != providers.KindBadRequest {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A server that answers the creation of a conversation with something else — no ID, an ID too
// long to be one or with a control character, another object, no JSON — gives no conversation:
// KindUnavailable, never a truncated or forged ID.
func TestNewConversation_RefusesWhatIsNoConversation(t *testing.T) {
	for _, body := range []string{`{}`, `{"id":"` + strings.Repeat("c", 300) + `"}`, `{"id":"conv_\u0000x"}`,
		`{"id":"resp_1","object":"response"}`, `[]`, `not json`} {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, body)
		}))
		p, err := openai.New(openai.Config{API: openai.Responses, BaseURL: ts.URL, APIKey: sentinel, HTTPClient: ts.Client()})
		if err != nil {
			t.Fatal(err)
		}
		conv, err := p.NewConversation(context.Background())
		if e := asError(t, err); conv != nil || e.Kind != providers.KindUnavailable {
			t.Errorf("%s: %+v %v", body, conv, err)
		}
		var nilCtx context.Context
		if _, err := p.NewConversation(nilCtx); asError(t, err).Kind != providers.KindBadRequest {
			t.Errorf("nil context: %v", err)
		}
		ts.Close()
	}
}
