package observe_test

import (
	"context"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/observe"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

func TestNew_DefaultsToTheGlobalProviders(t *testing.T) {
	tel, err := observe.New()
	if err != nil {
		t.Fatal(err)
	}
	// With no SDK installed everything is a no-op, and nothing breaks.
	tel.PipelineEvent(resilience.Event{Type: resilience.EventRetryScheduled, Pipeline: "openai", Attempt: 1, Context: context.Background()})
	ctx, tr := tel.StartCall(context.Background(), client.CallStart{Operation: client.OperationChat, Provider: "openai"})
	if ctx == nil || tr == nil {
		t.Fatal("StartCall returned nil")
	}
	tr.TryDone(client.TryResult{Provider: "openai"})
	tr.End(nil)
}

func TestJoin_FeedsEveryObserver(t *testing.T) {
	var a, b int
	if observe.Join() != nil || observe.Join(nil, nil) != nil {
		t.Error("Join of nothing is not nil")
	}
	one := func(resilience.Event) { a++ }
	observe.Join(nil, one)(resilience.Event{})
	observe.Join(one, func(resilience.Event) { b++ })(resilience.Event{})
	if a != 2 || b != 1 {
		t.Errorf("a=%d b=%d", a, b)
	}
}

func TestTelemetry_UnknownSystemIsOther(t *testing.T) {
	h := newHarness(t)
	_, tr := h.tel.StartCall(context.Background(), client.CallStart{Operation: client.OperationChat, Provider: "custom", Model: "m"})
	tr.TryDone(client.TryResult{Provider: "custom", Model: "m", Err: &providers.Error{Kind: providers.KindUnknown}})
	tr.End(&providers.Error{Kind: providers.KindUnknown})
	span := h.span(t, "chat m")
	if got := attr(t, span.Attributes(), "gen_ai.provider.name").AsString(); got != "_OTHER" {
		t.Errorf("gen_ai.provider.name %q", got)
	}
	if got := attr(t, span.Attributes(), "error.type").AsString(); got != "_OTHER" {
		t.Errorf("error.type %q", got)
	}
}
