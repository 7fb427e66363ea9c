package client

import (
	"github.com/steadyllm/steady/internal/redact"
	"github.com/steadyllm/steady/resilience"
)

// WithPriority runs the call in class p — resilience.PriorityInteractive, PriorityDefault or
// PriorityBatch — on every route it tries, instead of the class of its policy (a named policy's
// Priority, else each provider's own): which call a freed bulkhead slot goes to, which may
// spend the last of a per-minute limit, and which is shed first when there is no room for
// everyone (see resilience.Priority). A batch call shed under pressure fails at once with
// bulkhead_full or rate_limited and a RetryAfter (in deferred mode, a deferral.Error that
// retries then), and falls back along the chain as such failures do. Any other value is a
// bad_request before anything is sent.
func WithPriority(p resilience.Priority) CallOption {
	return func(o *callOptions) { o.priority, o.hasPriority = p, true }
}

// priorityOf is the class a call with options o asked for, "" for its policy's.
func (o *callOptions) priorityOf() resilience.Priority {
	if o == nil {
		return ""
	}
	return o.priority
}

// checkPriority checks the class of WithPriority.
func checkPriority(o *callOptions) error {
	if o.hasPriority && (o.priority == "" || !o.priority.Valid()) {
		return badCall("WithPriority(\"%s\"): must be \"interactive\", \"default\" or \"batch\"", redact.Safe(string(o.priority), 64))
	}
	return nil
}
