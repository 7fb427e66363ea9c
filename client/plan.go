package client

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// The plan of a call: what its options ask of the client — the chain, the policy, the sticky
// key — checked against it before anything is sent.

// WithPolicies gives the client named policies for WithPolicy: LLM.Policies of the
// configuration, each a whole Options whose retries and time limits a call may run under.
// Every policy is validated by New.
func WithPolicies(policies map[string]resilience.Options) Option {
	return func(b *builder) error {
		if b.c.policies == nil {
			b.c.policies = map[string]*resilience.Policy{}
		}
		for name, o := range policies {
			p, err := resilience.NewPolicy(name, o)
			if err != nil {
				return fmt.Errorf("client: policy %q: %w", name, err)
			}
			b.c.policies[name] = p
		}
		return nil
	}
}

// plan is what the client does for one call with options: the providers it tries, and the
// policy each runs under.
type plan struct {
	chain  []string
	policy *resilience.Policy // nil: each provider's own
	sticky string             // WithStickyKey
	// budget and shadowBudget are what the budgets decided for the call, and what those in
	// shadow mode would have (cost.Action's names), "" when none counts it (WithBudgets).
	budget, shadowBudget string
}

// planFor checks o against the client and returns the call's plan; an option naming what the
// client does not have is a bad_request.
func (c *Client) planFor(o *callOptions) (plan, error) {
	p := plan{chain: c.chain}
	if o == nil {
		return p, nil
	}
	if err := c.checkOptions(o); err != nil {
		return p, err
	}
	p.sticky = o.sticky
	if o.policy != "" {
		p.policy = c.policy(o.policy)
		if p.policy == nil {
			return p, badOption("WithPolicy", o.policy, "must name a policy of the client (WithPolicies, LLM.Policies)", c.policyNames())
		}
	}
	for _, list := range [][]string{o.only, o.skip} {
		for i, n := range list {
			e := c.lookup(n)
			if e == nil {
				return p, badOption("WithProviders/WithoutProviders", n, "must name a provider of the client", c.order)
			}
			list[i] = e.name
		}
	}
	if o.only != nil || o.skip != nil || o.noFall {
		var chain []string
		src := c.chain
		if o.only != nil {
			src = o.only
		}
		for _, n := range src {
			if !slices.Contains(o.skip, n) && !slices.Contains(chain, n) {
				chain = append(chain, n)
			}
		}
		if o.noFall && len(chain) > 1 {
			chain = chain[:1]
		}
		if len(chain) == 0 {
			return p, &providers.Error{Kind: providers.KindBadRequest,
				Message: "the call's options leave no provider to try"}
		}
		p.chain = chain
	}
	return p, nil
}

// policyFor returns the policy provider e runs the call under: the plan's named policy or the
// provider's own, with the call's own time limit when it set one. nil means the pipeline's.
func (p plan) policyFor(d *deployment, o *callOptions) *resilience.Policy {
	pol := p.policy
	if o != nil && o.hasTO {
		if pol == nil {
			pol = d.pipeline.Policy()
		}
		pol = pol.WithTimeout(o.timeout)
	}
	if o != nil && o.deferred {
		if pol == nil {
			pol = d.pipeline.Policy()
		}
		pol = pol.WithoutRetries()
	}
	return pol
}

// maxWait is the call's resilience.Call.MaxWait for a try that the chain computed as wait:
// a deferred call never waits.
func (o *callOptions) maxWait(wait time.Duration) time.Duration {
	if o != nil && o.deferred {
		return -1
	}
	return wait
}

// deferred wraps the failure err of a call with options o in a *deferral.Error when the call
// runs in deferred mode; err otherwise.
func (c *Client) deferred(o *callOptions, err error) error {
	if err == nil || o == nil || !o.deferred {
		return err
	}
	pol := c.policy(o.policy)
	if pol == nil && len(c.chain) > 0 {
		pol = c.entries[c.chain[0]].pipeline.Policy()
	}
	return &deferral.Error{Decision: deferral.Decider{Policy: pol}.Decide(err, o.attempt), Err: err}
}

// policy returns the named policy of the client, matched exactly, else case-insensitively;
// nil when there is none.
func (c *Client) policy(name string) *resilience.Policy {
	if p := c.policies[name]; p != nil {
		return p
	}
	for n, p := range c.policies {
		if strings.EqualFold(n, name) {
			return p
		}
	}
	return nil
}

func (c *Client) policyNames() []string {
	names := make([]string, 0, len(c.policies))
	for n := range c.policies {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func badOption(option, value, rule string, known []string) *providers.Error {
	return &providers.Error{Kind: providers.KindBadRequest,
		Message: fmt.Sprintf("%s %q: %s (have %v)", option, value, rule, known)}
}
