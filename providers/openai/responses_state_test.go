package openai_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
)

// A conversation that stores nothing keeps its reasoning across turns: the reasoning items come
// back with their encrypted content and go out again, in order, before the assistant's turn —
// to the provider that produced them, and to no other.
func TestResponses_ReasoningItemsGoBackOnlyToTheirOrigin(t *testing.T) {
	s := newServer(t)
	p := responsesProvider(t, s)
	other := responsesProvider(t, s, func(c *openai.Config) { c.Organization = "org-other" }) // another endpoint
	off := false
	req := ask("What is 2+2?")
	req.Store, req.Reasoning = &off, &providers.Reasoning{Effort: "low", Summary: "auto"}
	resp, err := p.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	th := resp.Message.Thinking
	if len(th) != 1 || th[0].ID == "" || th[0].Encrypted == "" || th[0].Origin != p.SharingScope() || resp.Reasoning == "" {
		t.Fatalf("thinking %+v", th)
	}
	anthropicBlock := providers.ThinkingBlock{Text: "claude's", Signature: "sig"} // never an item
	foreign := providers.ThinkingBlock{ID: "rs_elsewhere", Encrypted: "opaque", Origin: "another-endpoint"}
	next := *req
	assistant := resp.Message
	assistant.Thinking = append([]providers.ThinkingBlock{anthropicBlock, foreign}, assistant.Thinking...)
	next.Messages = append(append([]providers.Message(nil), req.Messages...), assistant,
		providers.Message{Role: providers.RoleUser, Content: "And 3+3?"})
	if _, err := p.Chat(context.Background(), &next); err != nil {
		t.Fatal(err) // the fake refuses encrypted content that is not its own: only its own went
	}
	in := bodyOf(t, s)["input"]
	want := jsonOf(t, fmt.Sprintf(`[
		{"type":"message","role":"user","content":"What is 2+2?"},
		{"type":"reasoning","id":%q,"summary":[{"type":"summary_text","text":%q}],"encrypted_content":%q},
		{"type":"message","role":"assistant","content":%q},
		{"type":"message","role":"user","content":"And 3+3?"}]`, th[0].ID, th[0].Text, th[0].Encrypted, resp.Message.Content))
	if !reflect.DeepEqual(in, want) {
		t.Fatalf("input %v: only this provider's reasoning item goes back, whole, before the assistant's turn", in)
	}
	if _, err := other.Chat(context.Background(), &next); err != nil {
		t.Fatal(err)
	}
	if body := lastBody(t, s); strings.Contains(body, `"type":"reasoning"`) {
		t.Fatalf("another endpoint got the reasoning:\n%s", body)
	}
}

// An answer stored is continued from by its ID alone, on the provider that stored it; the
// chat completions wire and another endpoint refuse to, before sending anything.
func TestResponses_PreviousContinuesAStoredAnswer(t *testing.T) {
	s := newServer(t)
	p := responsesProvider(t, s)
	resp, err := p.Chat(context.Background(), ask("Remember 7."))
	if err != nil {
		t.Fatal(err)
	}
	next := &providers.ChatRequest{Messages: ask("What number?").Messages, Previous: resp.Stored}
	if _, err := p.Chat(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	if b := bodyOf(t, s); b["previous_response_id"] != resp.ID {
		t.Fatalf("body %v", b)
	}
	sent := s.Journal().Len()
	for name, q := range map[string]providers.Provider{
		"chat completions": newProvider(t, s),
		"another endpoint": responsesProvider(t, s, func(c *openai.Config) { c.Organization = "org-other" }),
	} {
		_, err := q.Chat(context.Background(), next)
		if e := asError(t, err); e.Kind != providers.KindBadRequest || !strings.Contains(e.Message, "Previous") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if s.Journal().Len() != sent {
		t.Fatal("a refused request was sent")
	}
	// An answer the server does not hold: its 400, as the API words it.
	_, err = p.Chat(context.Background(), &providers.ChatRequest{Messages: ask("x").Messages,
		Previous: &providers.StoredResponse{ID: "resp_unknown"}})
	if e := asError(t, err); e.Kind != providers.KindBadRequest || !strings.Contains(e.Message, "not found") {
		t.Fatalf("%#v", e)
	}
}

// The key never reaches an error, whatever the server echoes: its message, the request ID, an
// error event, a failed response.
func TestResponses_APIKeyNeverAppears(t *testing.T) {
	echo := "bad key " + sentinel
	s := newServer(t, mocks.Error(401, "invalid_request_error", echo),
		mocks.StreamError(1, "server_error").WithMessage(echo).WithHeader("X-Request-Id", sentinel))
	p := responsesProvider(t, s)
	_, err := p.Chat(context.Background(), ask("x"))
	if e := asError(t, err); e.Kind != providers.KindAuth || strings.Contains(fmt.Sprintf("%#v %+v", e, e), sentinel[:12]) {
		t.Fatalf("%#v", e)
	}
	st, err := p.ChatStream(context.Background(), ask("x"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = drain(t, st)
	if e := asError(t, err); e.Kind != providers.KindUnavailable || strings.Contains(fmt.Sprintf("%#v %+v %s", e, e, e.RequestID), sentinel[:12]) {
		t.Fatalf("%#v", e)
	}
	body := []byte(`{"object":"response","status":"failed","error":{"code":"server_error","message":"` + sentinel + `"}}`)
	_, err = fuzzResponses(t, 200, "application/json", body).Chat(context.Background(), ask("x"))
	checkError(t, err)
}
