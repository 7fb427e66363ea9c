package resilience

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestDefaultOptions_AreValidAndMatchTheSeed(t *testing.T) {
	o := DefaultOptions()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.RetryCount != 3 || o.RetryBaseDelaySeconds != 1 || o.RetryMaxDelaySeconds != 30 ||
		o.CircuitBreakerThreshold != 5 || o.CircuitBreakerDurationSeconds != 30 || o.TimeoutSeconds != 30 ||
		o.BulkheadMaxConcurrency != 10 || o.BulkheadMaxQueue != 100 {
		t.Fatalf("defaults differ from the seed: %+v", o)
	}
}

func TestValidate_ReportsEveryBadFieldAtOnce(t *testing.T) {
	o := DefaultOptions()
	o.RetryCount = -1
	o.RetryBaseDelaySeconds = math.NaN()
	o.RetryBackoff = "fibonacci"
	o.RetryableStatusCodes = []int{429, 200}
	o.RetryBudgetPercent = 150
	o.CircuitBreakerThreshold = 0
	o.CircuitBreakerDurationSeconds = 0
	o.CircuitBreakerFailureRatio = 1.5
	o.CircuitBreakerHalfOpenMaxRequests = 0
	o.TimeoutSeconds = -5
	o.StreamIdleTimeoutSeconds = math.Inf(1)
	o.BulkheadMaxConcurrency = 0
	o.BulkheadMaxQueue = -1
	o.BulkheadQueueTimeoutSeconds = -1
	err := o.Validate()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("got %v, want *ValidationError", err)
	}
	want := []string{"RetryCount", "RetryBaseDelaySeconds", "RetryBackoff", "RetryableStatusCodes[1]",
		"RetryBudgetPercent", "CircuitBreakerThreshold", "CircuitBreakerDurationSeconds",
		"CircuitBreakerFailureRatio", "CircuitBreakerHalfOpenMaxRequests", "TimeoutSeconds",
		"StreamIdleTimeoutSeconds", "BulkheadMaxConcurrency", "BulkheadMaxQueue", "BulkheadQueueTimeoutSeconds"}
	got := map[string]FieldError{}
	for _, p := range ve.Problems {
		got[p.Field] = p
	}
	for _, f := range want {
		p, ok := got[f]
		if !ok {
			t.Errorf("%s not reported; problems: %v", f, ve.Problems)
			continue
		}
		if p.Allowed == "" || !strings.Contains(err.Error(), f) {
			t.Errorf("%s: no allowed range or missing from the message", f)
		}
	}
	if !strings.Contains(err.Error(), "RetryCount = -1: must be between 0 and 20") {
		t.Errorf("message lacks name, value and range: %v", err)
	}
}

func TestValidate_Relations(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Options)
		field string
	}{
		{"max below base", func(o *Options) { o.RetryBaseDelaySeconds = 5; o.RetryMaxDelaySeconds = 2 }, "RetryMaxDelaySeconds"},
		{"attempt not below total", func(o *Options) { o.AttemptTimeoutSeconds = 30 }, "AttemptTimeoutSeconds"},
		{"ratio without window", func(o *Options) { o.CircuitBreakerFailureRatio = 0.5; o.CircuitBreakerSamplingSeconds = 0 }, "CircuitBreakerSamplingSeconds"},
		{"ratio without throughput", func(o *Options) { o.CircuitBreakerFailureRatio = 0.5; o.CircuitBreakerMinThroughput = 0 }, "CircuitBreakerMinThroughput"},
		{"min break above the longest", func(o *Options) { o.CircuitBreakerMinDurationSeconds = 31 }, "CircuitBreakerMinDurationSeconds"},
		{"min break below a millisecond", func(o *Options) { o.CircuitBreakerMinDurationSeconds = 0.0001 }, "CircuitBreakerMinDurationSeconds"},
		{"min break negative", func(o *Options) { o.CircuitBreakerMinDurationSeconds = -1 }, "CircuitBreakerMinDurationSeconds"},
		{"min break NaN", func(o *Options) { o.CircuitBreakerMinDurationSeconds = math.NaN() }, "CircuitBreakerMinDurationSeconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			tc.edit(&o)
			var ve *ValidationError
			if err := o.Validate(); !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Field != tc.field {
				t.Fatalf("got %v, want one problem with %s", err, tc.field)
			}
		})
	}
	o := DefaultOptions()
	o.TimeoutSeconds = 0 // disabled: any attempt timeout is fine
	o.AttemptTimeoutSeconds = 60
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	// A longest break below the automatic minimum (5 s) is fine: the minimum follows it.
	o = DefaultOptions()
	o.CircuitBreakerDurationSeconds = 0.02
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	// The message names the range, with the longest break it depends on.
	o.CircuitBreakerMinDurationSeconds = 1
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(),
		"CircuitBreakerMinDurationSeconds = 1: must be 0 (automatic) or a number between 0.001 and CircuitBreakerDurationSeconds (0.02)") {
		t.Fatalf("got %v", err)
	}
}

func TestNew_RejectsInvalidOptionsAndCopiesSlices(t *testing.T) {
	o := DefaultOptions()
	o.BulkheadMaxConcurrency = 0
	if p, err := New(o); p != nil || err == nil {
		t.Fatal("New accepted invalid options")
	}
	o = DefaultOptions()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	o.RetryableStatusCodes[0] = 500
	if p.Options().RetryableStatusCodes[0] != 429 || p.policy.retryable.has(500) {
		t.Fatal("the pipeline shares the caller's RetryableStatusCodes slice")
	}
}

func TestCircuitState_String(t *testing.T) {
	for s, want := range map[CircuitState]string{CircuitClosed: "closed", CircuitHalfOpen: "half-open", CircuitOpen: "open", CircuitIsolated: "isolated"} {
		if s.String() != want {
			t.Errorf("%d: %q, want %q", s, s.String(), want)
		}
	}
}

// Options written by hand from the zero value get a pointer to DefaultOptions.
func TestValidate_ZeroValueSaysToStartFromTheDefaults(t *testing.T) {
	_, err := New(Options{RetryCount: 2, TimeoutSeconds: 5})
	var ve *ValidationError
	if !errors.As(err, &ve) || !ve.FromZero || !strings.Contains(err.Error(), "start from resilience.DefaultOptions()") {
		t.Fatalf("got %v", err)
	}
	o := DefaultOptions()
	o.RetryCount = -1
	if err := o.Validate(); err == nil || strings.Contains(err.Error(), "DefaultOptions") {
		t.Fatalf("a single bad field of the defaults: %v", err)
	}
}

// NaN and the infinities are refused in every float field, also in one its settings leave
// unused (a sampling window with ratio mode off).
func TestOptions_NonFiniteIsRefusedEvenWhenUnused(t *testing.T) {
	for _, f := range []func(*Options){
		func(o *Options) { o.CircuitBreakerSamplingSeconds = math.NaN() },
		func(o *Options) { o.RetryBudgetPercent, o.RetryBudgetWindowSeconds = 0, math.Inf(1) },
	} {
		o := DefaultOptions()
		f(&o)
		if err := o.Validate(); err == nil {
			t.Errorf("accepted %+v", o)
		}
	}
}
