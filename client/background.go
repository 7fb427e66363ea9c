package client

import (
	"context"

	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// Retrieve reads a background answer (providers.ChatRequest.Background) as it stands — pending,
// complete, incomplete or cancelled (ChatResponse.Status), or the *providers.Error it failed
// with — from the route that stored it: the deployment whose provider's sharing scope is
// stored.Origin and which answers in background mode (providers.BackgroundResponder). The read
// goes through that route's pipeline and never elsewhere: only that route holds the answer. A
// StoredResponse without an ID or Origin, or whose Origin no route of this client has, is
// refused with KindBadRequest before anything is sent. An answer the server no longer holds is
// providers.ErrResponseGone.
//
// The options that apply are the call's policy and time limit (WithPolicy, WithTimeout), its
// HTTP extras (WithHeader, WithRequestID) and Deferred, under which the read waits for nothing
// (a rate-limit pause, a backoff, a bulkhead slot), is tried once, and fails with a
// *deferral.Error, as a job's look at its answer should (see Background).
func (c *Client) Retrieve(ctx context.Context, stored providers.StoredResponse, opts ...CallOption) (*providers.ChatResponse, error) {
	return c.onStored(ctx, stored, "Retrieve", collect(opts), providers.BackgroundResponder.Retrieve)
}

// Cancel cancels a background answer that is still pending and returns it as it stands, on the
// route that stored it, under the same rules and options as Retrieve.
func (c *Client) Cancel(ctx context.Context, stored providers.StoredResponse, opts ...CallOption) (*providers.ChatResponse, error) {
	return c.onStored(ctx, stored, "Cancel", collect(opts), providers.BackgroundResponder.Cancel)
}

// Background returns the client's reads and cancels of background answers made with opts (as
// Retrieve and Cancel take them), as a deferral.Retriever: a job looks at the answer it waits
// for with
//
//	resp, err := decider.Await(ctx, c.Background(client.Deferred(attempt)), awaiting, attempt)
//
// so that the look never waits inside the worker.
func (c *Client) Background(opts ...CallOption) BackgroundAnswers {
	return BackgroundAnswers{c: c, opts: opts}
}

// BackgroundAnswers reads and cancels a client's background answers with fixed call options
// (Client.Background). It is a deferral.Retriever.
type BackgroundAnswers struct {
	c    *Client
	opts []CallOption
}

var _ deferral.Retriever = BackgroundAnswers{}

// Retrieve is the client's Retrieve with the options given to Background.
func (b BackgroundAnswers) Retrieve(ctx context.Context, stored providers.StoredResponse) (*providers.ChatResponse, error) {
	return b.c.Retrieve(ctx, stored, b.opts...)
}

// Cancel is the client's Cancel with the options given to Background.
func (b BackgroundAnswers) Cancel(ctx context.Context, stored providers.StoredResponse) (*providers.ChatResponse, error) {
	return b.c.Cancel(ctx, stored, b.opts...)
}

// onStored runs op (a read or a cancel) of the stored answer on the route that holds it, with
// options o.
func (c *Client) onStored(ctx context.Context, stored providers.StoredResponse, name string, o *callOptions,
	op func(providers.BackgroundResponder, context.Context, providers.StoredResponse) (*providers.ChatResponse, error)) (*providers.ChatResponse, error) {
	d, bg, err := c.holder(ctx, stored, name)
	if err != nil {
		return nil, c.failed(o, err)
	}
	call, err := c.storedCall(ctx, d, o)
	if err != nil {
		return nil, c.failed(o, err)
	}
	resp, err := op(bg, call, stored)
	if err != nil {
		return nil, c.failed(o, err)
	}
	if resp != nil {
		resp.Provider, resp.Deployment = d.owner, d.name
		if o != nil {
			resp.ClientRequestID = o.requestID
		}
	}
	return resp, nil
}

// NewConversation creates a conversation (providers.ChatRequest.Conversation) on the provider
// named provider — "" for the first provider of the fallback chain that keeps conversations
// (providers.ConversationKeeper: OpenAI's on the Responses API) — through the pipeline of its
// first deployment, which will hold it: every call that continues it is pinned to that route.
// The options that apply are those of Retrieve. A provider that keeps no conversations, or a
// name the client does not have, is a bad_request before anything is sent.
func (c *Client) NewConversation(ctx context.Context, provider string, opts ...CallOption) (*providers.Conversation, error) {
	o := collect(opts)
	if ctx == nil {
		return nil, c.failed(o, errNilContext())
	}
	var d *deployment
	var keeper providers.ConversationKeeper
	names := c.chain
	if provider != "" {
		e := c.lookup(provider)
		if e == nil {
			return nil, c.failed(o, badOption("NewConversation", provider, "must name a provider of the client", c.order))
		}
		names = []string{e.name}
	}
	for _, name := range names {
		for _, dep := range c.entries[name].deps {
			if k, ok := dep.provider.(providers.ConversationKeeper); ok && d == nil {
				d, keeper = dep, k
			}
		}
	}
	if d == nil {
		return nil, c.failed(o, &providers.Error{Kind: providers.KindBadRequest,
			Message: "NewConversation: no provider of this call keeps conversations (OpenAI's on the Responses API does)"})
	}
	call, err := c.storedCall(ctx, d, o)
	if err != nil {
		return nil, c.failed(o, err)
	}
	conv, err := keeper.NewConversation(call)
	if err != nil {
		return nil, c.failed(o, err)
	}
	return conv, nil
}

// storedCall is the context of a call on provider state at route d, with options o: the
// pipeline's policy, wait and HTTP extras the options ask for.
func (c *Client) storedCall(ctx context.Context, d *deployment, o *callOptions) (*resilience.Call, error) {
	if o != nil {
		if err := c.checkOptions(o); err != nil {
			return nil, err
		}
		if o.policy != "" && c.policy(o.policy) == nil {
			return nil, badOption("WithPolicy", o.policy, "must name a policy of the client (WithPolicies, LLM.Policies)", c.policyNames())
		}
	}
	if o.sendsExtras() {
		ctx = &callExtras{Context: ctx, o: o}
	}
	call := new(resilience.Call)
	call.Init(ctx, false)
	if o != nil {
		call.Policy, call.MaxWait = plan{policy: c.policy(o.policy)}.policyFor(d, o), o.maxWait(0)
	}
	return call, nil
}

// holder is the route that holds the stored answer, and its provider; the error that refuses
// the call when none does.
func (c *Client) holder(ctx context.Context, stored providers.StoredResponse, op string) (*deployment, providers.BackgroundResponder, error) {
	refuse := func(msg string) error {
		return &providers.Error{Kind: providers.KindBadRequest, Message: op + ": " + msg}
	}
	switch {
	case ctx == nil:
		return nil, nil, errNilContext()
	case stored.ID == "" || stored.Origin == "":
		return nil, nil, refuse("the StoredResponse needs its ID and its Origin; take it from ChatResponse.Stored")
	}
	for _, name := range c.order {
		for _, d := range c.entries[name].deps {
			s, ok := d.provider.(providers.Scoper)
			if !ok || s.SharingScope() != stored.Origin {
				continue
			}
			if bg, ok := d.provider.(providers.BackgroundResponder); ok {
				return d, bg, nil
			}
		}
	}
	return nil, nil, refuse("no route of this client holds the stored answer (its Origin names none that answers in background mode)")
}
