package client

import (
	"context"

	"github.com/steadyllm/steady/providers"
)

// Retrieve reads a background answer (providers.ChatRequest.Background) as it stands — pending,
// complete, incomplete or cancelled (ChatResponse.Status), or the *providers.Error it failed
// with — from the route that stored it: the deployment whose provider's sharing scope is
// stored.Origin and which answers in background mode (providers.BackgroundResponder). The read
// goes through that route's pipeline and never elsewhere: only that route holds the answer. A
// StoredResponse without an ID or Origin, or whose Origin no route of this client has, is
// refused with KindBadRequest before anything is sent.
func (c *Client) Retrieve(ctx context.Context, stored providers.StoredResponse) (*providers.ChatResponse, error) {
	bg, name, err := c.holder(ctx, stored, "Retrieve")
	if err != nil {
		return nil, err
	}
	resp, err := bg.Retrieve(ctx, stored)
	if resp != nil {
		resp.Deployment = name
	}
	return resp, err
}

// Cancel cancels a background answer that is still pending and returns it as it stands, on the
// route that stored it, under the same rules as Retrieve.
func (c *Client) Cancel(ctx context.Context, stored providers.StoredResponse) (*providers.ChatResponse, error) {
	bg, name, err := c.holder(ctx, stored, "Cancel")
	if err != nil {
		return nil, err
	}
	resp, err := bg.Cancel(ctx, stored)
	if resp != nil {
		resp.Deployment = name
	}
	return resp, err
}

// holder is the route that holds the stored answer, and its name; the error that refuses the
// call when none does.
func (c *Client) holder(ctx context.Context, stored providers.StoredResponse, op string) (providers.BackgroundResponder, string, error) {
	refuse := func(msg string) error {
		return &providers.Error{Kind: providers.KindBadRequest, Message: op + ": " + msg}
	}
	switch {
	case ctx == nil:
		return nil, "", errNilContext()
	case stored.ID == "" || stored.Origin == "":
		return nil, "", refuse("the StoredResponse needs its ID and its Origin; take it from ChatResponse.Stored")
	}
	for _, name := range c.order {
		for _, d := range c.entries[name].deps {
			s, ok := d.provider.(providers.Scoper)
			if !ok || s.SharingScope() != stored.Origin {
				continue
			}
			if bg, ok := d.provider.(providers.BackgroundResponder); ok {
				return bg, d.name, nil
			}
		}
	}
	return nil, "", refuse("no route of this client holds the stored answer (its Origin names none that answers in background mode)")
}
