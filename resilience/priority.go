package resilience

import (
	"context"
	"fmt"
)

// Priority is a call's class when its pipeline is under pressure: which call a freed bulkhead
// slot goes to, which call may spend the last of a per-minute limit, and which call is turned
// away first when there is no room for everyone. Without pressure every class is served the
// same, at once.
//
//   - "interactive": a person waits for the answer. Served first from the bulkhead queue; never
//     evicted from it by another class.
//   - "default": the class of every call that names none, so a pipeline whose calls name no
//     class behaves as a plain first-come, first-served bulkhead.
//   - "batch": a job that can come back later. Served after the others, may not take the share
//     of slots and budgets kept for them (Options.PriorityReservePercent: batch calls never
//     hold more slots than those outside it, so a call of a higher class finds one free while
//     its classes hold fewer than the reserve), and the first to be shed: evicted from a
//     full queue by a higher class, refused at once when it cannot wait, always with a
//     RetryAfter estimate so that a job queue can bring it back (package deferral).
//
// No class starves: while calls of a lower class wait, they get at least
// Options.PriorityMinSharePercent of the slots handed over, whatever the higher classes ask;
// and a class with no call in a full queue may still queue one, in the place of the newest
// waiter of the class with the most.
//
// A call's class is its own (Call.Priority, WithPriority, client.WithPriority), else its
// policy's (Options.Priority of a named policy), else the pipeline's. The empty Priority means
// "not set here".
type Priority string

// The classes, highest first.
const (
	PriorityInteractive Priority = "interactive"
	PriorityDefault     Priority = "default"
	PriorityBatch       Priority = "batch"
)

// Priorities lists the classes, highest first.
var Priorities = []Priority{PriorityInteractive, PriorityDefault, PriorityBatch}

// Valid reports whether p names a class, or is empty (not set).
func (p Priority) Valid() bool {
	switch p {
	case "", PriorityInteractive, PriorityDefault, PriorityBatch:
		return true
	}
	return false
}

// ParsePriority returns the class named s, exactly as the constants spell it; an error for any
// other value. The empty string is PriorityDefault.
func ParsePriority(s string) (Priority, error) {
	p := Priority(s)
	if !p.Valid() {
		return "", fmt.Errorf("resilience: unknown priority %q (want \"interactive\", \"default\" or \"batch\")", s)
	}
	if p == "" {
		return PriorityDefault, nil
	}
	return p, nil
}

// class is a Priority as an index, highest first, for the bulkhead's and the pacer's arrays.
type class uint8

const (
	classInteractive class = iota
	classDefault
	classBatch
	numClasses
	// classUnknown is a class not looked up yet: finding it walks the call's context, which a
	// call that meets no pressure never does.
	classUnknown class = 255
)

func (p Priority) class() class {
	switch p {
	case PriorityInteractive:
		return classInteractive
	case PriorityBatch:
		return classBatch
	}
	return classDefault
}

func (c class) priority() Priority {
	switch c {
	case classInteractive:
		return PriorityInteractive
	case classBatch:
		return PriorityBatch
	}
	return PriorityDefault
}

// classOf returns the class of a call made with ctx: that of the innermost Call that sets a
// Priority, else that of the call's policy (the innermost Call's that has one), else pol's
// (the pipeline's own).
func classOf(ctx context.Context, pol *Policy) class {
	if ctx == nil {
		return pol.class
	}
	var callPol *Policy
	c, _ := ctx.Value(callKey{}).(*Call)
	for ; c != nil; c, _ = c.Context.Value(callKey{}).(*Call) {
		if c.Priority != "" {
			return c.Priority.class()
		}
		if callPol == nil {
			callPol = c.Policy
		}
	}
	if callPol != nil {
		return callPol.class
	}
	return pol.class
}

// WithPriority returns a context whose calls through any pipeline run in class p (see
// Priority), whatever their policy says: how a caller of a bare Pipeline.Wrap gives one call
// its class. The context is a *Call: a client that embeds a Call sets its Priority field
// instead. An empty p leaves the policy's class in force; an invalid one counts as
// PriorityDefault (check it with Priority.Valid first).
func WithPriority(ctx context.Context, p Priority) context.Context {
	c := &Call{}
	c.Init(ctx, false)
	c.Priority = p
	return c
}

// shareCredit is the credit a waiting lower class earns each time a slot or a budget goes to
// a higher class instead, so that it is served once every 1/share turns: share/(1-share).
func shareCredit(percent float64) float64 {
	if percent <= 0 {
		return 0
	}
	s := percent / 100
	return s / (1 - s)
}
