package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
)

// Retrieve and Cancel take the call options that apply to a read: the request ID reaches the
// server and the answer, Deferred fails at once with a *deferral.Error (no wait in a rate-limit
// pause, nothing sent), an unknown policy is a bad_request before sending.
func TestRetrieve_TakesCallOptions(t *testing.T) {
	s := mocks.NewServer(mocks.WithRouteScript(mocks.RouteStoredResponses, mocks.OK(), mocks.RateLimited(30*time.Second)))
	defer s.Close()
	c := newClient(t, responsesProvider("openai", "", s, policy()))
	req := hello()
	req.Background = true
	resp, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Retrieve(context.Background(), *resp.Stored, client.WithRequestID("look-1"))
	if err != nil || got.ClientRequestID != "look-1" || got.Provider != "openai" || got.Deployment != "openai" {
		t.Fatalf("%+v %v", got, err)
	}
	if last, _ := s.Journal().Last(); last.Header.Get(client.RequestIDHeader) != "look-1" {
		t.Fatalf("headers %v", last.Header)
	}
	var de *deferral.Error
	_, err = c.Retrieve(context.Background(), *resp.Stored, client.Deferred(1))
	if !errors.As(err, &de) || de.Decision.Kind != providers.KindRateLimited || de.Decision.Delay != 30*time.Second {
		t.Fatalf("429: %v", err)
	}
	sent := s.Journal().Len()
	_, err = c.Background(client.Deferred(2)).Cancel(context.Background(), *resp.Stored)
	if !errors.As(err, &de) || de.Decision.Kind != providers.KindRateLimited || s.Journal().Len() != sent {
		t.Fatalf("during the pause: %v (%d sent)", err, s.Journal().Len()-sent)
	}
	_, err = c.Retrieve(context.Background(), *resp.Stored, client.WithPolicy("no such policy"))
	if e := asProviderError(t, err); e.Kind != providers.KindBadRequest || !strings.Contains(e.Message, "WithPolicy") || s.Journal().Len() != sent {
		t.Fatalf("%v", err)
	}
}
