package observe_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/observe"
	"github.com/steadyllm/steady/resilience"
)

func TestPipeline_BulkheadEventsAreCountedByClass(t *testing.T) {
	h := newHarness(t)
	for _, e := range []resilience.Event{
		{Type: resilience.EventBulkheadAdmitted, Priority: resilience.PriorityInteractive},
		{Type: resilience.EventBulkheadQueued, Priority: resilience.PriorityBatch, Limit: 4},
		{Type: resilience.EventBulkheadAdmitted, Priority: resilience.PriorityBatch, Duration: 300 * time.Millisecond},
		{Type: resilience.EventBulkheadRejected, Priority: resilience.PriorityBatch, Rejected: resilience.RejectedShed,
			Delay: time.Second},
	} {
		e.Pipeline, e.Context = "openai", context.Background()
		h.tel.PipelineEvent(e)
	}
	provider := observe.KeyProvider.String("openai")
	batch := observe.KeyPriority.String("batch")
	if p := h.value(t, observe.MetricBulkheadAdmitted, provider, observe.KeyPriority.String("interactive")); p.sum != 1 {
		t.Errorf("interactive admitted %v", p.sum)
	}
	if p := h.value(t, observe.MetricBulkheadQueued, provider, batch); p.sum != 1 {
		t.Errorf("batch queued %v", p.sum)
	}
	if p := h.value(t, observe.MetricBulkheadWait, provider, batch); p.count != 1 || p.sum != 0.3 {
		t.Errorf("batch wait %+v", p)
	}
	if p := h.value(t, observe.MetricBulkheadRejected, provider, batch, observe.KeyReason.String("shed")); p.sum != 1 {
		t.Errorf("batch shed %v", p.sum)
	}
	if logs := h.logs.String(); !contains(logs, `"priority":"batch"`) || !contains(logs, "shed from the full queue") {
		t.Errorf("logs %s", logs)
	}
}

// A bare pipeline with an adaptive limit, against a fake server that answers 529 over one call
// in flight: the limit's decrease is a gauge and a counted change.
func TestPipeline_AdaptiveLimitIsAGaugeAndItsChangesAreCounted(t *testing.T) {
	h := newHarness(t)
	s := mocks.NewServer(mocks.WithScript(mocks.Overloaded()))
	defer s.Close()
	o := resilience.DefaultOptions()
	o.AdaptiveConcurrency, o.BulkheadMaxConcurrency = true, 10
	o.RetryBaseDelaySeconds, o.RetryUseJitter = 0.001, false
	b := newBare(t, h, o)
	if code, err := b.post(context.Background(), s); err != nil || code != 200 {
		t.Fatalf("%d %v", code, err)
	}
	provider := observe.KeyProvider.String("openai")
	if p := h.value(t, observe.MetricConcurrencyLimit, provider); p.sum != 9 {
		t.Errorf("limit gauge %v, want 9", p.sum)
	}
	if p := h.value(t, observe.MetricConcurrencyLimitChanges, provider, observe.KeyDirection.String("decrease")); p.sum != 1 {
		t.Errorf("decreases %v", p.sum)
	}
	if !contains(h.logs.String(), "concurrency limit for openai lowered from 10 to 9 (overload: status 529)") {
		t.Errorf("logs %s", h.logs.String())
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
