package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// What docs/capacity.md shows of the example's output. The budgets refill while the example
// runs (3 requests a minute: one every 20 s), so the share left is checked to be small rather
// than exactly 0 %.
func TestCapacity_SpendsTheCapacityAsTheGuideSays(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, "appsettings.json"); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"conversation-42: both turns on openai/openai-west\n",
		"6 more calls: 2 on anthropic, 3 on openai/openai-east, 1 on openai/openai-west; the fake answered 429 0 times\n",
		"served by openai/fast; hedges sent 1, a hedge won: true\n",
		"one slot, a batch call queued before an interactive one: served interactive, then batch\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	left := regexp.MustCompile(`openai/openai-(east|west) \(gpt-4o-mini\): (\d+)% of 3 requests a minute left`).FindAllStringSubmatch(got, -1)
	if len(left) != 2 {
		t.Fatalf("headroom lines %v:\n%s", left, got)
	}
	for _, m := range left {
		if pct, _ := strconv.Atoi(m[2]); pct >= 34 {
			t.Errorf("%s has %d%% of its budget left after its three calls", m[1], pct)
		}
	}
}
