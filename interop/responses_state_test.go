package interop

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/responses"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
)

// bodyAt decodes the body of request i (from 0) that s received.
func bodyAt(t *testing.T, s *mocks.Server, i int) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(s.Journal().Requests()[i].Body, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// A conversation created, then continued with server-side compaction and an earlier turn's
// compaction item: steady sends the body openai-go sends — the Conversations API's create, then
// context_management, conversation and the compaction input item, field for field — and both
// read the same compaction item and conversation from the answer.
func TestResponses_CompactionAndConversationSendWhatOpenAIGoSends(t *testing.T) {
	s := newServer(t, mocks.WithReply("Noted."))
	p := newSteadyResponses(t, s)
	oa := newOpenAI(s, 0)
	conv, err := p.NewConversation(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	theirConv, err := oa.Conversations.New(context.Background(), conversations.ConversationNewParams{})
	if err != nil {
		t.Fatal(err)
	}
	reqs := s.Journal().Requests()
	if reqs[0].Path != reqs[1].Path || reqs[0].Method != http.MethodPost || !reflect.DeepEqual(bodyAt(t, s, 0), bodyAt(t, s, 1)) ||
		!strings.HasPrefix(conv.ID, "conv_") || !strings.HasPrefix(theirConv.ID, "conv_") {
		t.Fatalf("create: steady %s %s, openai-go %s %s", reqs[0].Path, reqs[0].Body, reqs[1].Path, reqs[1].Body)
	}

	long := strings.Repeat("the history of Paris, in detail ", 10)
	earlier, err := p.Chat(context.Background(), &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: long}},
		CompactThreshold: 20})
	if err != nil || earlier.Message.Compaction == nil {
		t.Fatalf("%+v %v", earlier, err)
	}
	item := earlier.Message.Compaction
	ours, err := p.Chat(context.Background(), &providers.ChatRequest{
		Model: "gpt-4o",
		Messages: []providers.Message{
			{Role: providers.RoleSystem, Content: "Be brief."},
			{Role: providers.RoleUser, Content: long},
			earlier.Message,
			{Role: providers.RoleUser, Content: long + "and then?"},
		},
		Conversation:     conv,
		CompactThreshold: 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	sent := lastJSON(t, s)
	msg := func(role responses.EasyInputMessageRole, text string) responses.ResponseInputItemUnionParam {
		return responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{Role: role, Type: responses.EasyInputMessageTypeMessage,
			Content: responses.EasyInputMessageContentUnionParam{OfString: openai.String(text)}}}
	}
	theirs, err := oa.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "gpt-4o",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			msg(responses.EasyInputMessageRoleSystem, "Be brief."),
			msg(responses.EasyInputMessageRoleUser, long),
			{OfCompaction: &responses.ResponseCompactionItemParam{ID: openai.String(item.ID), EncryptedContent: item.Encrypted}},
			msg(responses.EasyInputMessageRoleAssistant, earlier.Message.Content),
			msg(responses.EasyInputMessageRoleUser, long+"and then?"),
		}},
		Conversation:      responses.ResponseNewParamsConversationUnion{OfString: openai.String(conv.ID)},
		ContextManagement: []responses.ResponseNewParamsContextManagement{{Type: "compaction", CompactThreshold: openai.Int(20)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := lastJSON(t, s); !reflect.DeepEqual(sent, want) {
		a, _ := json.MarshalIndent(sent, "", " ")
		b, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("steady sent\n%s\nopenai-go sent\n%s", a, b)
	}
	var their responses.ResponseCompactionItem
	for _, it := range theirs.Output {
		if it.Type == "compaction" {
			their = it.AsCompaction()
		}
	}
	got := ours.Message.Compaction
	// (The fake numbers items by request, and encrypts the request's number.)
	if got == nil || their.ID == "" || got.ID[:8] != their.ID[:8] || len(got.Encrypted) != len(their.EncryptedContent) ||
		!strings.HasPrefix(got.Encrypted, "enc_fake_") || !strings.HasPrefix(their.EncryptedContent, "enc_fake_") ||
		got.Origin != p.SharingScope() {
		t.Fatalf("steady read %+v, openai-go %+v", got, their)
	}
	if ours.Conversation == nil || ours.Conversation.ID != conv.ID || theirs.Conversation.ID != conv.ID || ours.Message.Content != theirs.OutputText() {
		t.Fatalf("conversation: steady %+v, openai-go %+v", ours.Conversation, theirs.Conversation)
	}
}

// Streamed, the compaction item comes whole with the answer's end: steady's Done delta holds
// what openai-go reads from the item's response.output_item.done.
func TestResponses_StreamedCompactionReadsWhatOpenAIGoReads(t *testing.T) {
	s := newServer(t, mocks.WithReply("Noted."))
	p := newSteadyResponses(t, s)
	long := strings.Repeat("the history of Paris, in detail ", 10)
	st, err := p.ChatStream(context.Background(), &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: long}},
		CompactThreshold: 20})
	if err != nil {
		t.Fatal(err)
	}
	var last providers.Delta
	for {
		d, err := st.Recv()
		if err != nil {
			break
		}
		last = d
	}
	st.Close()
	sent := lastJSON(t, s)
	stream := newOpenAI(s, 0).Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "gpt-4o",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			{OfMessage: &responses.EasyInputMessageParam{Role: responses.EasyInputMessageRoleUser, Type: responses.EasyInputMessageTypeMessage,
				Content: responses.EasyInputMessageContentUnionParam{OfString: openai.String(long)}}}}},
		ContextManagement: []responses.ResponseNewParamsContextManagement{{Type: "compaction", CompactThreshold: openai.Int(20)}},
	})
	var their responses.ResponseCompactionItem
	for stream.Next() {
		if ev := stream.Current(); ev.Type == "response.output_item.done" && ev.Item.Type == "compaction" {
			their = ev.Item.AsCompaction()
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	_ = stream.Close()
	if want := lastJSON(t, s); !reflect.DeepEqual(sent, want) {
		t.Fatalf("steady sent %v, openai-go sent %v", sent, want)
	}
	got := last.Compaction
	if !last.Done || got == nil || their.ID == "" || got.ID[:8] != their.ID[:8] || len(got.Encrypted) != len(their.EncryptedContent) ||
		got.Origin != p.SharingScope() {
		t.Fatalf("steady read %+v, openai-go %+v", got, their)
	}
}

// A background answer started, read back until done, cancelled and lost: steady sends what
// openai-go sends (background in the body; GET /responses/{id}; POST …/cancel), reads the
// statuses and the answer openai-go reads, and a read of an answer the server no longer holds
// is the 404 openai-go gets, which steady names gone.
func TestResponses_BackgroundReadsAndCancelsAsOpenAIGo(t *testing.T) {
	s := newServer(t, mocks.WithReply("All done."))
	p := newSteadyResponses(t, s)
	oa := newOpenAI(s, 0)
	ours, err := p.Chat(context.Background(), &providers.ChatRequest{Background: true,
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "Write it."}}})
	if err != nil || ours.Status != providers.StatusQueued || ours.Stored == nil {
		t.Fatalf("%+v %v", ours, err)
	}
	sent := lastJSON(t, s)
	theirs, err := oa.Responses.New(context.Background(), responses.ResponseNewParams{Model: "gpt-4o", Background: openai.Bool(true),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			{OfMessage: &responses.EasyInputMessageParam{Role: responses.EasyInputMessageRoleUser, Type: responses.EasyInputMessageTypeMessage,
				Content: responses.EasyInputMessageContentUnionParam{OfString: openai.String("Write it.")}}}}}})
	if err != nil || theirs.Status != "queued" {
		t.Fatalf("%+v %v", theirs, err)
	}
	if want := lastJSON(t, s); !reflect.DeepEqual(sent, want) {
		t.Fatalf("steady sent %v, openai-go sent %v", sent, want)
	}
	same := func(what string) {
		t.Helper()
		reqs := s.Journal().Requests()
		a, b := reqs[len(reqs)-2], reqs[len(reqs)-1]
		if a.Method != b.Method || strings.Replace(a.Path, ours.Stored.ID, "{id}", 1) != strings.Replace(b.Path, theirs.ID, "{id}", 1) {
			t.Fatalf("%s: steady %s %s, openai-go %s %s", what, a.Method, a.Path, b.Method, b.Path)
		}
	}
	for _, want := range []string{"in_progress", "completed"} {
		got, err := p.Retrieve(context.Background(), *ours.Stored)
		if err != nil {
			t.Fatal(err)
		}
		their, err := oa.Responses.Get(context.Background(), theirs.ID, responses.ResponseGetParams{})
		if err != nil {
			t.Fatal(err)
		}
		same("retrieve")
		if string(got.Status) != want || string(their.Status) != want || got.Message.Content != their.OutputText() {
			t.Fatalf("steady read %s %q, openai-go %s %q", got.Status, got.Message.Content, their.Status, their.OutputText())
		}
	}
	got, err := p.Cancel(context.Background(), *ours.Stored)
	if err != nil {
		t.Fatal(err)
	}
	their, err := oa.Responses.Cancel(context.Background(), theirs.ID)
	if err != nil {
		t.Fatal(err)
	}
	same("cancel")
	if got.Status != providers.StatusCompleted || their.Status != "completed" || got.Message.Content != "All done." {
		t.Fatalf("cancel after completion: steady %s, openai-go %s", got.Status, their.Status)
	}
	s.Forget(ours.Stored.ID)
	s.Forget(theirs.ID)
	_, err = p.Retrieve(context.Background(), *ours.Stored)
	_, theirErr := oa.Responses.Get(context.Background(), theirs.ID, responses.ResponseGetParams{})
	var apiErr *openai.Error
	if !errors.Is(err, providers.ErrResponseGone) || !errors.As(theirErr, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
		t.Fatalf("gone: steady %v, openai-go %v", err, theirErr)
	}
}
