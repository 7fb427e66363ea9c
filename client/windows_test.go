package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
)

// The one line that does what a gateway's context-window fallback does:
// WithFallbackOn(KindContextTooLong, "large"). A prompt too long for the primary goes to
// "large" whether the primary says so (it declares no window, and answers context_too_long)
// or its declared window is too small (it is skipped without a request) — and "large" need
// not declare a window. A prompt that no route it could reach can hold, each declaring its
// window, is refused before anything is sent.
func TestContextWindow_TheOneLineOfAGatewaysContextWindowFallback(t *testing.T) {
	long := &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: strings.Repeat("word ", 400)}}}
	t.Run("the primary answers too long", func(t *testing.T) {
		primary := mocks.NewServer(mocks.WithContextWindows(map[string]int{"gpt-4o-mini": 100}))
		defer primary.Close()
		other := mocks.NewServer()
		defer other.Close()
		large := mocks.NewServer(mocks.WithReply("the large window answers"))
		defer large.Close()
		c := newClient(t, openAIProvider("primary", primary, policy()), openAIProvider("other", other, policy()),
			openAIProvider("large", large, policy()), client.WithFallback("primary", "other"),
			client.WithFallbackOn(providers.KindContextTooLong, "large"))
		resp, err := c.Chat(context.Background(), long)
		if err != nil || resp.Provider != "large" || primary.Journal().Len() != 1 || other.Journal().Len() != 0 {
			t.Fatalf("%v %v; primary %d, other %d", resp, err, primary.Journal().Len(), other.Journal().Len())
		}
	})
	t.Run("the primary declares a window too small", func(t *testing.T) {
		primary := mocks.NewServer()
		defer primary.Close()
		large := mocks.NewServer(mocks.WithReply("the large window answers"))
		defer large.Close()
		c := newClient(t, openAIProvider("primary", primary, policy()), openAIProvider("large", large, policy()),
			client.WithContextWindow("primary", 400, nil), client.WithFallback("primary"),
			client.WithFallbackOn(providers.KindContextTooLong, "large"))
		resp, err := c.Chat(context.Background(), long)
		if err != nil || resp.Provider != "large" || primary.Journal().Len() != 0 {
			t.Fatalf("%v %v; primary %d", resp, err, primary.Journal().Len())
		}
		if resp, err := c.Chat(context.Background(), hello()); err != nil || resp.Provider != "primary" {
			t.Fatalf("a short prompt: %v %v", resp, err)
		}
	})
	t.Run("no route can hold it", func(t *testing.T) {
		primary := mocks.NewServer()
		defer primary.Close()
		large := mocks.NewServer()
		defer large.Close()
		c := newClient(t, openAIProvider("primary", primary, policy()), openAIProvider("large", large, policy()),
			client.WithContextWindow("primary", 100, nil), client.WithContextWindow("large", 300, nil),
			client.WithFallback("primary"), client.WithFallbackOn(providers.KindContextTooLong, "large"))
		_, err := c.Chat(context.Background(), long)
		var pe *providers.Error
		if !errors.As(err, &pe) || pe.Kind != providers.KindContextTooLong || pe.Overflow == nil || pe.Overflow.Window != 300 {
			t.Fatalf("%v", err)
		}
		if primary.Journal().Len()+large.Journal().Len() != 0 {
			t.Fatal("sent")
		}
		// The context-window fallback's window counts: one that can hold it, and it is sent.
		c = newClient(t, openAIProvider("primary", primary, policy()), openAIProvider("large", large, policy()),
			client.WithContextWindow("primary", 100, nil), client.WithContextWindow("large", 200_000, nil),
			client.WithFallback("primary"), client.WithFallbackOn(providers.KindContextTooLong, "large"))
		if resp, err := c.Chat(context.Background(), long); err != nil || resp.Provider != "large" {
			t.Fatalf("%v %v", resp, err)
		}
	})
}
