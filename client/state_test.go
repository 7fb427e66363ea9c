package client_test

import (
	"context"
	"strings"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
)

// A conversation is created on a provider that keeps conversations (the first of the chain
// that does, or the one named) and pins every call that continues it to that provider: when
// it fails, the call fails saying so, and no other provider is asked.
func TestConversation_PinsTheCallToTheProviderThatKeepsIt(t *testing.T) {
	claudeS, openaiS, otherS := mocks.NewServer(), mocks.NewServer(), mocks.NewServer()
	for _, s := range []*mocks.Server{claudeS, openaiS, otherS} {
		defer s.Close()
	}
	c := newClient(t, anthropicProvider("claude", claudeS, policy()), responsesProvider("openai", "", openaiS, policy()),
		responsesProvider("other", "org-other", otherS, policy()), client.WithFallback("claude", "openai", "other"))
	first, err := c.NewConversation(context.Background(), "")
	if err != nil || !strings.HasPrefix(first.ID, "conv_") || openaiS.Journal().Len() != 1 {
		t.Fatalf("%+v %v", first, err)
	}
	if _, err := c.NewConversation(context.Background(), "claude"); asProviderError(t, err).Kind != providers.KindBadRequest {
		t.Fatalf("claude keeps no conversations: %v", err)
	}
	if _, err := c.NewConversation(context.Background(), "nobody"); asProviderError(t, err).Kind != providers.KindBadRequest {
		t.Fatalf("an unknown provider: %v", err)
	}
	var nilCtx context.Context
	if _, err := c.NewConversation(nilCtx, ""); asProviderError(t, err).Kind != providers.KindBadRequest || openaiS.Journal().Len() != 1 {
		t.Fatalf("a nil context: %v", err)
	}
	conv, err := c.NewConversation(context.Background(), "other")
	if err != nil {
		t.Fatal(err)
	}
	req := &providers.ChatRequest{Messages: hello().Messages, Conversation: conv}
	resp, err := c.Chat(context.Background(), req)
	if err != nil || resp.Provider != "other" || resp.Conversation == nil || resp.Conversation.ID != conv.ID {
		t.Fatalf("%+v %v", resp, err)
	}
	otherS.RouteScript(mocks.RouteResponses, mocks.Status(502).Always())
	before := claudeS.Journal().Len() + openaiS.Journal().Len()
	_, err = c.Chat(context.Background(), req)
	if e := asProviderError(t, err); e.Kind != providers.KindUnavailable ||
		!strings.Contains(e.Message, "not sent elsewhere: the call continues from the conversation "+conv.ID+", which only other holds") {
		t.Fatalf("%v", err)
	}
	st, err := c.ChatStream(context.Background(), req)
	if err == nil {
		st.Close()
		t.Fatal("the stream fell back")
	}
	if n := claudeS.Journal().Len() + openaiS.Journal().Len(); n != before {
		t.Fatalf("%d requests went to providers that do not keep the conversation", n-before)
	}
}

// A conversation with a compaction item falls back while the caller keeps the whole
// transcript (the other provider gets it without the item), and is pinned once it was pruned
// at the item: only the provider that made the item is asked.
func TestCompaction_WholeTranscriptFallsBackPrunedIsPinned(t *testing.T) {
	openaiS, claudeS := mocks.NewServer(mocks.WithReply("Noted.")), mocks.NewServer(mocks.WithReply("Claude here."))
	defer openaiS.Close()
	defer claudeS.Close()
	c := newClient(t, responsesProvider("openai", "", openaiS, policy()), anthropicProvider("claude", claudeS, policy()),
		client.WithFallback("openai", "claude"))
	long := providers.Message{Role: providers.RoleUser, Content: strings.Repeat("the history of Paris, in detail ", 10)}
	resp, err := c.Chat(context.Background(), &providers.ChatRequest{Messages: []providers.Message{long}, CompactThreshold: 20})
	if err != nil || resp.Message.Compaction == nil {
		t.Fatalf("%+v %v", resp, err)
	}
	whole := []providers.Message{long, resp.Message, {Role: providers.RoleUser, Content: "And then?"}}
	openaiS.RouteScript(mocks.RouteResponses, mocks.Status(503).Always())

	got, err := c.Chat(context.Background(), &providers.ChatRequest{Messages: whole, MaxTokens: 100})
	if err != nil || got.Provider != "claude" {
		t.Fatalf("whole transcript: %+v %v", got, err)
	}
	if r, _ := claudeS.Journal().Last(); strings.Contains(string(r.Body), resp.Message.Compaction.Encrypted) ||
		!strings.Contains(string(r.Body), "the history of Paris") {
		t.Fatalf("claude got %s", r.Body)
	}
	before := claudeS.Journal().Len()
	_, err = c.Chat(context.Background(), &providers.ChatRequest{Messages: providers.PruneCompacted(whole), MaxTokens: 100})
	if e := asProviderError(t, err); e.Provider != "openai" || !strings.Contains(e.Message, "not sent elsewhere: the call continues from the compaction item") {
		t.Fatalf("pruned: %v", err)
	}
	if claudeS.Journal().Len() != before {
		t.Fatal("a pruned conversation fell back to a provider that cannot read it")
	}
}
