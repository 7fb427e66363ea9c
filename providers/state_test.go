package providers_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/steadyllm/steady/providers"
)

// The gone codes match their sentinels, through wrapping too, and nothing else does.
func TestGone_MatchesItsCodesOnly(t *testing.T) {
	for _, c := range []struct {
		code         string
		resp, conv   bool
		prefillMatch bool
	}{
		{providers.CodeResponseGone, true, false, false},
		{providers.CodeConversationGone, false, true, false},
		{providers.CodePrefillUnsupported, false, false, true},
		{"not_found", false, false, false},
		{"", false, false, false},
	} {
		err := fmt.Errorf("wrapped: %w", &providers.Error{Kind: providers.KindNotFound, Code: c.code})
		if errors.Is(err, providers.ErrResponseGone) != c.resp || errors.Is(err, providers.ErrConversationGone) != c.conv ||
			providers.Gone(err) != (c.resp || c.conv) || errors.Is(err, providers.ErrPrefillUnsupported) != c.prefillMatch {
			t.Errorf("code %q", c.code)
		}
	}
	if providers.Gone(nil) || providers.Gone(errors.New("response_gone")) {
		t.Error("Gone matched what is not a gone error")
	}
}

// PruneCompacted keeps the system messages and everything from the last compaction item on,
// marks that item Pruned in a copy, and leaves the caller's conversation as it was.
func TestPruneCompacted_KeepsWhatTheLastItemDoesNotStandFor(t *testing.T) {
	first := &providers.Compaction{ID: "cmp_1", Encrypted: "e1", Origin: "o"}
	last := &providers.Compaction{ID: "cmp_2", Encrypted: "e2", Origin: "o"}
	msgs := []providers.Message{
		{Role: providers.RoleSystem, Content: "sys"},
		{Role: providers.RoleUser, Content: "u1"},
		{Role: providers.RoleAssistant, Content: "a1", Compaction: first},
		{Role: providers.RoleUser, Content: "u2"},
		{Role: providers.RoleAssistant, Content: "a2", Compaction: last},
		{Role: providers.RoleUser, Content: "u3"},
	}
	got := providers.PruneCompacted(msgs)
	var texts []string
	for _, m := range got {
		texts = append(texts, m.Content)
	}
	if strings.Join(texts, ",") != "sys,a2,u3" || !got[1].Compaction.Pruned || got[1].Compaction.ID != "cmp_2" {
		t.Fatalf("%v %+v", texts, got[1].Compaction)
	}
	if last.Pruned || msgs[4].Compaction != last || len(msgs) != 6 {
		t.Fatal("the caller's conversation was changed")
	}
	plain := []providers.Message{{Role: providers.RoleUser, Content: "hi"}}
	if got := providers.PruneCompacted(plain); len(got) != 1 || &got[0] != &plain[0] {
		t.Fatal("a conversation without a compaction item was changed")
	}
	if _, ok := (&providers.ChatRequest{Messages: msgs}).Pin(); ok {
		t.Fatal("a whole transcript is pinned")
	}
	for want, req := range map[string]*providers.ChatRequest{
		"the stored answer resp_1":                           {Previous: &providers.StoredResponse{ID: "resp_1", Origin: "o"}},
		"the conversation conv_1":                            {Conversation: &providers.Conversation{ID: "conv_1", Origin: "o"}},
		"the compaction item cmp_2 of a pruned conversation": {Messages: got},
	} {
		if pin, ok := req.Pin(); !ok || pin.What != want || pin.Origin != "o" {
			t.Errorf("%+v %v, want %q", pin, ok, want)
		}
	}
}
