package openai

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"unicode"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/internal/wire"
)

// Background mode on the Responses API: ChatRequest.Background sends background: true (with
// store, which it requires), and the answer comes back queued; Retrieve reads it again (GET
// /responses/{id}) and Cancel cancels it (POST /responses/{id}/cancel). The statuses map to
// ChatResponse.Status: queued and in_progress are pending (no finish reason, no answer yet),
// completed and incomplete are the answer with its finish reason, cancelled is what was
// produced before the cancel, and failed is the *providers.Error the response carries.

var (
	_ providers.BackgroundResponder = (*Provider)(nil)
	_ providers.ConversationKeeper  = (*Provider)(nil)
)

// Retrieve reads the stored answer's current state (see providers.BackgroundResponder). The
// provider must speak the Responses API (Config.API); otherwise, or for a StoredResponse of
// another Origin or without an ID, it returns KindBadRequest before sending. A retrieved
// answer's JSON is not set: the request that asked for it is not known here (decode
// Message.Content).
func (p *Provider) Retrieve(ctx context.Context, stored providers.StoredResponse) (*providers.ChatResponse, error) {
	u, err := p.storedURL(ctx, stored, "Retrieve")
	if err != nil {
		return nil, err
	}
	resp, err := p.responsesDo(ctx, http.MethodGet, u, nil, false)
	if err != nil {
		return nil, p.goneErr(err, stored.ID)
	}
	return p.readResponse(ctx, resp, nil, true)
}

// Cancel cancels the stored answer if it is still pending and returns its state (see
// providers.BackgroundResponder), under the same refusals as Retrieve.
func (p *Provider) Cancel(ctx context.Context, stored providers.StoredResponse) (*providers.ChatResponse, error) {
	u, err := p.storedURL(ctx, stored, "Cancel")
	if err != nil {
		return nil, err
	}
	resp, err := p.responsesDo(ctx, http.MethodPost, u+"/cancel", nil, false)
	if err != nil {
		return nil, p.goneErr(err, stored.ID)
	}
	return p.readResponse(ctx, resp, nil, true)
}

// goneErr is err, the failure of an exchange that named the stored answer id, marked as the
// answer being gone when it was a 404 (see storedGone).
func (p *Provider) goneErr(err error, id string) error {
	var pe *providers.Error
	if errors.As(err, &pe) {
		return p.storedGone(pe, id, "")
	}
	return err
}

// storedURL is the URL of the stored answer, or the error that refuses what names it.
func (p *Provider) storedURL(ctx context.Context, stored providers.StoredResponse, op string) (string, error) {
	switch {
	case ctx == nil:
		return "", p.badRequest(providers.NilContext)
	case p.api != Responses:
		return "", p.badRequest(op + ": only the Responses API (Config.API) keeps background answers")
	case stored.ID == "":
		return "", p.badRequest(op + ": the StoredResponse has no ID; take it from ChatResponse.Stored")
	case len(stored.ID) > maxStoredIDLen:
		return "", p.badRequest(op + ": the StoredResponse's ID is too long to be one")
	case stored.Origin != "" && stored.Origin != p.scope:
		return "", p.badRequest(op + ": the answer " + p.errs.Field(stored.ID) + " was stored by another provider (Origin differs): " +
			"only the provider that stored it can read it")
	}
	return p.responses.url + "/" + url.PathEscape(stored.ID), nil
}

// maxStoredIDLen bounds a stored answer's ID, as providers.ChatRequest.Validate bounds
// Previous.ID.
const maxStoredIDLen = 256

// NewConversation creates an empty conversation with the Conversations API (POST
// /conversations beside /responses) and names it with this provider's Origin (see
// providers.ConversationKeeper). The provider must speak the Responses API (Config.API);
// otherwise it returns KindBadRequest before sending. An answer that names no usable
// conversation (no ID, an ID longer than 256 bytes or with a control character, another
// object) is KindUnavailable.
func (p *Provider) NewConversation(ctx context.Context) (*providers.Conversation, error) {
	switch {
	case ctx == nil:
		return nil, p.badRequest(providers.NilContext)
	case p.api != Responses:
		return nil, p.badRequest("NewConversation: only the Responses API (Config.API) keeps conversations")
	}
	u := strings.TrimSuffix(p.responses.url, "/responses") + "/conversations"
	resp, err := p.responsesDo(ctx, http.MethodPost, u, []byte("{}"), false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := wire.ReadAll(resp.Body, p.limits.MaxResponseBytes, "MaxResponseBytes")
	if err != nil {
		return nil, p.errs.ReadFailure(ctx, resp, "reading the conversation", err)
	}
	var c struct {
		ID     string `json:"id"`
		Object string `json:"object"`
	}
	if json.Unmarshal(data, &c) != nil || c.ID == "" || len(c.ID) > maxStoredIDLen || strings.ContainsFunc(c.ID, unicode.IsControl) ||
		(c.Object != "" && c.Object != "conversation") {
		return nil, p.notAResponse(resp, data)
	}
	return &providers.Conversation{ID: p.errs.Field(c.ID), Origin: p.scope}, nil
}
