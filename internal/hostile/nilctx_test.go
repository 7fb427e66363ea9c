package hostile_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/steadyllm/steady/health"
	"github.com/steadyllm/steady/providers"
)

// A nil context is an error on every entry point of every provider kind, never a panic, and
// nothing is sent.
func TestNilContext_IsABadRequestEverywhere(t *testing.T) {
	var sent atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { sent.Add(1) }))
	defer srv.Close()
	var nilCtx context.Context
	req := &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "hi"}}}
	for _, k := range kinds {
		p, err := k.build(k.name, k.baseURL(srv.URL), srv.Client(), providers.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		calls := map[string]func() error{
			"Chat":       func() error { _, err := p.Chat(nilCtx, req); return err },
			"ChatStream": func() error { _, err := p.ChatStream(nilCtx, req); return err },
			"Embed":      func() error { _, err := p.Embed(nilCtx, &providers.EmbedRequest{Inputs: []string{"x"}}); return err },
		}
		for name, call := range calls {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("%s %s panicked: %v", k.name, name, r)
					}
				}()
				if err := call(); providers.KindOf(err) != providers.KindBadRequest {
					t.Fatalf("%s %s: %v, want bad_request", k.name, name, err)
				}
			}()
		}
	}
	if n := sent.Load(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
	if err := health.NewChecker().Check(nilCtx); err == nil {
		t.Fatal("health Check with a nil context passed")
	}
}
