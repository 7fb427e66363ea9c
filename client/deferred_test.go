package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// slowPolicy would sleep for seconds between attempts: a deferred call must not.
func slowPolicy() resilience.Options {
	o := policy()
	o.RetryCount = 3
	o.RetryBaseDelaySeconds = 10
	o.RetryMaxDelaySeconds = 60
	return o
}

// deferredCtx bounds a call that must not wait: it fails the test instead of hanging.
func deferredCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func asDeferral(t *testing.T, err error) *deferral.Error {
	t.Helper()
	var de *deferral.Error
	if !errors.As(err, &de) {
		t.Fatalf("got %v, want a *deferral.Error", err)
	}
	return de
}

// One attempt per provider, no sleep, and the decision for the job's attempt.
func TestDeferred_OneAttemptPerProviderAndNoSleep(t *testing.T) {
	a := mocks.NewServer(mocks.WithScript(mocks.Status(503).Always()))
	defer a.Close()
	b := mocks.NewServer(mocks.WithScript(mocks.Overloaded().Always()))
	defer b.Close()
	c := newClient(t, openAIProvider("a", a, slowPolicy()), anthropicProvider("b", b, slowPolicy()), client.WithFallback("a", "b"))
	_, err := c.Chat(deferredCtx(t), hello(), client.Deferred(2))
	de := asDeferral(t, err)
	if a.Journal().Len() != 1 || b.Journal().Len() != 1 {
		t.Fatalf("attempts: a %d, b %d, want one each", a.Journal().Len(), b.Journal().Len())
	}
	// The chain's cause is a's 503; the provider's policy backs off 10 s, 20 s… with jitter.
	dec := de.Decision
	if !dec.Retry || dec.Source != deferral.SourceBackoff || dec.Attempt != 2 || dec.Delay < 10*time.Second || dec.Delay > 30*time.Second {
		t.Fatalf("decision %+v", dec)
	}
	var chain *client.ChainError
	if !errors.As(err, &chain) || len(chain.Failures) != 2 {
		t.Fatalf("the failure is not behind the deferral: %v", err)
	}
}

// A 429's hint becomes the decision, and the provider's pause refuses the next deferred call
// without sending it; a refused key is permanent.
func TestDeferred_HintsPausesAndPermanentFailures(t *testing.T) {
	s := mocks.NewServer(mocks.WithScript(mocks.RateLimited(40 * time.Second)))
	defer s.Close()
	c := newClient(t, openAIProvider("openai", s, slowPolicy()))
	_, err := c.Chat(deferredCtx(t), hello(), client.Deferred(1))
	if dec := asDeferral(t, err).Decision; !dec.Retry || dec.Source != deferral.SourceHint || dec.Delay != 40*time.Second {
		t.Fatalf("decision %+v", dec)
	}
	_, err = c.ChatStream(deferredCtx(t), hello(), client.Deferred(1))
	if dec := asDeferral(t, err).Decision; !dec.Retry || dec.Delay <= 30*time.Second || s.Journal().Len() != 1 {
		t.Fatalf("during the pause: %+v, %d requests", dec, s.Journal().Len())
	}

	bad := mocks.NewServer(mocks.WithAPIKey("another key"))
	defer bad.Close()
	c = newClient(t, openAIProvider("openai", bad, slowPolicy()))
	_, err = c.Embed(deferredCtx(t), &providers.EmbedRequest{Inputs: []string{"x"}}, client.Deferred(1))
	if dec := asDeferral(t, err).Decision; dec.Retry || dec.Kind != providers.KindAuth {
		t.Fatalf("decision %+v", dec)
	}
}

// A full bulkhead turns a deferred call away at once instead of queueing it.
func TestDeferred_DoesNotQueueForABulkheadSlot(t *testing.T) {
	s := mocks.NewServer(mocks.WithScript(mocks.SlowStream(300 * time.Millisecond)))
	defer s.Close()
	o := slowPolicy()
	o.BulkheadMaxConcurrency, o.BulkheadMaxQueue, o.BulkheadQueueTimeoutSeconds = 1, 10, 30
	c := newClient(t, openAIProvider("openai", s, o))
	st, err := c.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = c.Chat(deferredCtx(t), hello(), client.Deferred(1))
	de := asDeferral(t, err)
	var pe *providers.Error
	if !errors.As(de, &pe) || pe.Kind != providers.KindBulkheadFull || !de.Decision.Retry || s.Journal().Len() != 1 {
		t.Fatalf("%v (%d requests)", err, s.Journal().Len())
	}
}

// Without Deferred, errors stay as they were.
func TestDeferred_OnlyWhenAsked(t *testing.T) {
	s := mocks.NewServer(mocks.WithScript(mocks.Status(400).Always()))
	defer s.Close()
	c := newClient(t, openAIProvider("openai", s, policy()))
	_, err := c.Chat(context.Background(), hello())
	var de *deferral.Error
	if errors.As(err, &de) {
		t.Fatal("a call without Deferred returned a deferral")
	}
}
