package resilience

import (
	"math"
	"sync"
	"time"
)

// Retry budget: over a sliding window, retries may not exceed a percentage of the calls
// seen, plus a small floor so a quiet client can still retry. During an outage every call
// fails and wants to retry; the budget keeps the extra load at a bounded fraction instead
// of multiplying it by RetryCount+1. The window slides in tenths.
const budgetBuckets = 10

type budget struct {
	mu      sync.Mutex
	percent float64
	floor   int
	bucket  time.Duration // the window / budgetBuckets
	ev      *emitter      // for its clock: calls and retries are counted on one time line
	buckets [budgetBuckets]budgetCount
}

// budgetCount is one bucket's counts. A bucket is at most a tenth of an hour
// (RetryBudgetWindowSeconds), so 32 bits hold its calls at any pace a pipeline can serve; they
// stop at the largest rather than wrap. Every pipeline and every route keeps ten.
type budgetCount struct {
	epoch          int64 // which bucket period the counts belong to
	calls, retries int32
}

// inc32 adds one to n, which stops at the largest int32.
func inc32(n *int32) {
	if *n < math.MaxInt32 {
		*n++
	}
}

func newBudget(o Options, ev *emitter) *budget {
	return &budget{percent: o.RetryBudgetPercent, floor: o.RetryBudgetFloor, ev: ev,
		bucket: max(seconds(o.RetryBudgetWindowSeconds)/budgetBuckets, time.Millisecond)}
}

func (b *budget) slot(epoch int64) *budgetCount {
	c := &b.buckets[epoch%budgetBuckets]
	if c.epoch != epoch {
		*c = budgetCount{epoch: epoch}
	}
	return c
}

// recordCall counts a logical call, made at now, in the window.
func (b *budget) recordCall(now time.Time) {
	epoch := now.UnixNano() / int64(b.bucket)
	b.mu.Lock()
	inc32(&b.slot(epoch).calls)
	b.mu.Unlock()
}

// tryRetry reports whether one more retry fits the budget and, if so, counts it.
func (b *budget) tryRetry() bool {
	epoch := b.ev.now().UnixNano() / int64(b.bucket)
	b.mu.Lock()
	defer b.mu.Unlock()
	calls, retries := 0, 0
	for i := range b.buckets {
		if c := &b.buckets[i]; c.epoch > epoch-budgetBuckets && c.epoch <= epoch {
			calls += int(c.calls)
			retries += int(c.retries)
		}
	}
	if float64(retries+1) > float64(b.floor)+b.percent/100*float64(calls) {
		return false
	}
	inc32(&b.slot(epoch).retries)
	return true
}

// TryHedge reports whether the pipeline's retry budget (Options.RetryBudgetPercent) has room
// for one hedge of a call it serves, and if so spends it: retries and hedges share the budget,
// so a slow route cannot add more than the budget's share of its calls to the others' load.
// Without a budget (RetryBudgetPercent 0) every hedge is allowed.
func (p *Pipeline) TryHedge() bool {
	b := p.retry.budget
	return b == nil || b.tryRetry()
}
