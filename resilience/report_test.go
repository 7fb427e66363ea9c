package resilience

import (
	"context"
	"errors"
	"testing"
)

// callers finds the innermost Call's CallInfo, and the failure report of the innermost Call
// made to report failures, wherever it sits in the chain of contexts.
func TestCallers_NestedCalls(t *testing.T) {
	bg := context.Background()
	if info, report, pol := callers(bg); info != nil || report != nil || pol != nil {
		t.Fatalf("no Call: %v %v", info, report)
	}
	outer, reportFn := WithFailureReporter(bg)
	inner, info := WithCallInfo(context.WithValue(outer, tagKey{}, "between"))
	gotInfo, gotReport, _ := callers(inner)
	if gotInfo != info {
		t.Errorf("CallInfo %p, want the inner Call's %p", gotInfo, info)
	}
	if gotReport == nil || gotReport != &outer.(*Call).failure {
		t.Fatalf("report %p, want the outer Call's", gotReport)
	}
	boom := errors.New("overloaded event")
	reportFn(boom)
	reportFn(errors.New("second"))
	if err := gotReport.failure(); err != boom {
		t.Errorf("failure %v, want the first report", err)
	}
	if _, r, _ := callers(callInfoContext(bg)); r != nil {
		t.Errorf("a Call that does not report failures has no report")
	}
	if inner.Value(tagKey{}) != "between" {
		t.Errorf("values of the contexts between are lost")
	}
}

// callInfoContext is WithCallInfo's context alone.
func callInfoContext(ctx context.Context) context.Context {
	c, _ := WithCallInfo(ctx)
	return c
}
