package observe_test

import (
	"os"
	"strings"
	"testing"

	"github.com/steadyllm/steady/observe"
	"github.com/steadyllm/steady/resilience"
)

// The README's metric table lists every instrument and every reason a give-up is counted
// under, so the documentation cannot fall behind the code.
func TestReadme_ListsEveryMetricAndReason(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, m := range []string{observe.MetricRetries, observe.MetricRetryGaveUp, observe.MetricCircuitBreaker,
		observe.MetricCircuitRejected, observe.MetricTimeouts, observe.MetricBulkheadRejected, observe.MetricCooldowns,
		observe.MetricCooldownRejected, observe.MetricSharedStateFailures, observe.MetricActiveProbes, observe.MetricHedges, observe.MetricCallDuration,
		observe.MetricBulkheadAdmitted, observe.MetricBulkheadQueued, observe.MetricBulkheadWait,
		observe.MetricConcurrencyLimit, observe.MetricConcurrencyLimitChanges,
		observe.MetricOperationDuration, observe.MetricTokenUsage, observe.MetricTimeToFirstChunk} {
		if !strings.Contains(readme, "| `"+m+"` |") {
			t.Errorf("the README's metric table has no row for %s", m)
		}
	}
	for _, g := range []resilience.GaveUp{resilience.GaveUpExhausted, resilience.GaveUpBudget, resilience.GaveUpHintTooLong,
		resilience.GaveUpDeadline, resilience.GaveUpCircuitOpen, resilience.GaveUpWaitTooLong, resilience.GaveUpProbe,
		resilience.GaveUpSilent, resilience.GaveUpNotRetryable} {
		if !strings.Contains(readme, "`"+string(g)+"`") {
			t.Errorf("the README does not name the give-up reason %s", g)
		}
	}
	for _, r := range []resilience.BulkheadRejection{resilience.RejectedFull, resilience.RejectedTimeout, resilience.RejectedShed} {
		if !strings.Contains(readme, "`"+string(r)+"`") {
			t.Errorf("the README does not name the bulkhead rejection %s", r)
		}
	}
	for _, l := range []resilience.TimeLimit{resilience.TimeoutTotal, resilience.TimeoutAttempt, resilience.TimeoutStreamIdle,
		resilience.TimeoutFirstToken, resilience.TimeoutProbe} {
		if !strings.Contains(readme, "`"+string(l)+"`") {
			t.Errorf("the README does not name the time limit %s", l)
		}
	}
}
