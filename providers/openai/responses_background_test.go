package openai_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
)

// A background answer comes back queued and stored, then reads back in progress, then
// complete, with the answer the same request would get in the foreground.
func TestResponses_BackgroundAnswerIsPolledUntilComplete(t *testing.T) {
	s := newServer(t, mocks.Step{Text: "A long answer."})
	p := responsesProvider(t, s)
	req := ask("Think hard.")
	req.Background = true
	resp, err := p.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != providers.StatusQueued || !resp.Status.Pending() || resp.FinishReason != "" || resp.Message.Content != "" {
		t.Fatalf("started: status %q finish %q content %q", resp.Status, resp.FinishReason, resp.Message.Content)
	}
	if b := bodyOf(t, s); b["background"] != true {
		t.Fatalf("body %v: no background", b)
	}
	if resp.Stored == nil || resp.Stored.Origin != p.SharingScope() {
		t.Fatalf("stored %+v", resp.Stored)
	}
	var bg providers.BackgroundResponder = p
	got, err := bg.Retrieve(context.Background(), *resp.Stored)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != providers.StatusInProgress || !got.Status.Pending() {
		t.Fatalf("first read: status %q", got.Status)
	}
	got, err = bg.Retrieve(context.Background(), *resp.Stored)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != providers.StatusCompleted || got.Status.Pending() || got.FinishReason != providers.FinishStop ||
		got.Message.Content != "A long answer." || got.Stored == nil || got.Stored.ID != resp.Stored.ID {
		t.Fatalf("complete: %+v", got)
	}
	// Cancelling a finished answer returns it as it is.
	got, err = bg.Cancel(context.Background(), *resp.Stored)
	if err != nil || got.Status != providers.StatusCompleted || got.Message.Content != "A long answer." {
		t.Fatalf("cancel after completion: %+v, %v", got, err)
	}
}

// A pending answer cancelled stays cancelled.
func TestResponses_CancelledBackgroundAnswerStaysCancelled(t *testing.T) {
	s := newServer(t)
	p := responsesProvider(t, s)
	req := ask("Think hard.")
	req.Background = true
	resp, err := p.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Cancel(context.Background(), *resp.Stored)
	if err != nil || got.Status != providers.StatusCancelled || got.Status.Pending() || got.FinishReason != "" {
		t.Fatalf("cancel: %+v, %v", got, err)
	}
	for range 3 {
		got, err = p.Retrieve(context.Background(), *resp.Stored)
		if err != nil || got.Status != providers.StatusCancelled {
			t.Fatalf("read after cancel: %+v, %v", got, err)
		}
	}
}

// What names no background answer of this provider is refused before anything is sent, and an
// ID the server does not hold is its 404.
func TestResponses_RetrieveRefusesWhatItCannotRead(t *testing.T) {
	s := newServer(t)
	p := responsesProvider(t, s)
	chat := newProvider(t, s)
	cases := []struct {
		name   string
		p      *openai.Provider
		stored providers.StoredResponse
	}{
		{"no ID", p, providers.StoredResponse{}},
		{"another origin", p, providers.StoredResponse{ID: "resp_1", Origin: "elsewhere"}},
		{"chat completions", chat, providers.StoredResponse{ID: "resp_1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := s.Journal().Len()
			for _, op := range []func(context.Context, providers.StoredResponse) (*providers.ChatResponse, error){c.p.Retrieve, c.p.Cancel} {
				_, err := op(context.Background(), c.stored)
				if e := asError(t, err); e.Kind != providers.KindBadRequest {
					t.Fatalf("kind %s: %v", e.Kind, err)
				}
			}
			if s.Journal().Len() != before {
				t.Fatal("a refused request was sent")
			}
		})
	}
	_, err := p.Retrieve(context.Background(), providers.StoredResponse{ID: "resp_unknown"})
	if e := asError(t, err); e.Kind != providers.KindNotFound || e.StatusCode != 404 || !errors.Is(err, providers.ErrResponseGone) {
		t.Fatalf("unknown ID: %v", err)
	}
}

// A background answer the server no longer holds (its retention ended) is gone: reading,
// cancelling or continuing from it is an error that says so (ErrResponseGone), with the kind
// its status gives — not_found for a read, bad_request for a previous_response_id.
func TestResponses_AnAnswerTheServerNoLongerHoldsIsGone(t *testing.T) {
	s := newServer(t, mocks.Step{Expire: true})
	p := responsesProvider(t, s)
	req := ask("a long report")
	req.Background = true
	resp, err := p.Chat(context.Background(), req)
	if err != nil || resp.Stored == nil || !resp.Status.Pending() {
		t.Fatalf("%+v %v", resp, err)
	}
	for name, op := range map[string]func(context.Context, providers.StoredResponse) (*providers.ChatResponse, error){
		"retrieve": p.Retrieve, "cancel": p.Cancel} {
		_, err := op(context.Background(), *resp.Stored)
		e := asError(t, err)
		if e.Kind != providers.KindNotFound || e.Code != providers.CodeResponseGone || !errors.Is(err, providers.ErrResponseGone) ||
			!providers.Gone(err) || !strings.Contains(e.Message, resp.Stored.ID+" is gone") || strings.Contains(err.Error(), sentinel) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	next := ask("and then?")
	next.Previous = resp.Stored
	_, err = p.Chat(context.Background(), next)
	if e := asError(t, err); e.Kind != providers.KindBadRequest || !errors.Is(err, providers.ErrResponseGone) {
		t.Fatalf("previous_response_id: %v", err)
	}
	// Any other 404 or 400 is no gone answer.
	other := newServer(t, mocks.Status(404), mocks.Status(400))
	for _, want := range []int{404, 400} {
		_, err = responsesProvider(t, other).Chat(context.Background(), ask("hi"))
		if e := asError(t, err); e.StatusCode != want || providers.Gone(err) {
			t.Fatalf("another failure: %v", err)
		}
	}
}

// Background mode needs a stored answer and is spoken only by the Responses API: the other
// wires and Store false refuse it before sending.
func TestBackground_RefusedWhereItCannotBeServed(t *testing.T) {
	s := newServer(t)
	off := false
	req := ask("hi")
	req.Background = true
	noStore := *req
	noStore.Store = &off
	for name, call := range map[string]func() error{
		"chat completions": func() error { _, err := newProvider(t, s).Chat(context.Background(), req); return err },
		"store false":      func() error { _, err := responsesProvider(t, s).Chat(context.Background(), &noStore); return err },
	} {
		if e := asError(t, call()); e.Kind != providers.KindBadRequest {
			t.Fatalf("%s: kind %s", name, e.Kind)
		}
	}
	if n := s.Journal().Len(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
	if req.Needs(false)&providers.CapStoredResponses == 0 {
		t.Fatal("a background request does not need stored responses")
	}
}
