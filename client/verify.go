package client

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// Verify checks, with one cheap request per route, that the client's configuration can serve:
// for every deployment of every provider that chats, for every model it is configured with —
// its default (WithDefaultModel, else the provider's own), its deployments' own, and the
// models the model map gives it (WithModelMap) — a chat of one token ("ping", MaxTokens 1)
// through the deployment's pipeline, without retries. It is opt-in: each request is a real
// call, billed a few tokens (steady.FromConfig runs it when LLM.VerifyAtStart is set).
//
// A route whose request fails for a reason of its configuration — a key the server refuses, a
// model or deployment name it does not know, a base URL that redirects
// (providers.ErrorKind.Misconfigured) — is marked failing, as such a failure of a call marks it
// (health and the status page show it at once), and Verify returns a *VerifyError naming every
// such route with the provider's reason. A route that could not be checked (the server down, a
// timeout) is listed in the error's Unverified; when nothing was found wrong but some routes
// could not be checked, the error matches ErrUnverified, and the configuration may well be
// right (the chain falls back meanwhile): go on or not, as you see fit. Any other answer — a
// refusal of the tiny request itself (a bad_request) included — shows the route configured.
func (c *Client) Verify(ctx context.Context) error {
	if ctx == nil {
		return errNilContext()
	}
	ve := &VerifyError{}
	ping := &providers.ChatRequest{MaxTokens: 1, Messages: []providers.Message{{Role: providers.RoleUser, Content: "ping"}}}
	a := ask{need: providers.CapChat}
	for _, name := range c.order {
		e := c.entries[name]
		if !a.takes(e) {
			continue
		}
		for _, d := range e.deps {
			for _, m := range e.configuredModels(d) {
				r := routeOf(e, d, m)
				call := new(resilience.Call)
				try{route: r}.setUp(call, ctx, false, d.pipeline.Policy().WithoutRetries(), nil, 0)
				_, err := d.provider.Chat(call, withModel(ping, r.model))
				if err == nil {
					continue
				}
				perr := classify(ctx, d.name, err, &call.Info)
				switch {
				case perr.Kind.Misconfigured():
					noteFailing(r, perr)
					ve.Misconfigured = append(ve.Misconfigured, RouteProblem{Deployment: d.name, Model: r.key, Err: perr})
				case perr.Kind == providers.KindBadRequest:
					// The server read the request as the route's: the key and the model are known.
				default:
					ve.Unverified = append(ve.Unverified, RouteProblem{Deployment: d.name, Model: r.key, Err: perr})
				}
			}
		}
	}
	if ctx.Err() != nil {
		return classify(ctx, "", ctx.Err(), nil)
	}
	if len(ve.Misconfigured) == 0 {
		if len(ve.Unverified) > 0 {
			return &VerifyError{Unverified: ve.Unverified, onlyUnverified: true}
		}
		return nil
	}
	return ve
}

// configuredModels lists the models provider e is configured with on deployment d: the
// deployment's own, else the provider's default (the client's, else the provider's own) and the
// models the model map gives it, each once; none when nothing names one.
func (e *entry) configuredModels(d *deployment) []string {
	if d.model != "" {
		return []string{d.model}
	}
	var models []string
	if m := e.telemetryModel(e.model); m != "" {
		models = append(models, m)
	}
	for _, m := range e.models {
		models = append(models, m)
	}
	slices.Sort(models)
	return slices.Compact(models)
}

// VerifyError is what Client.Verify found: the routes whose configuration fails, and those it
// could not check.
type VerifyError struct {
	// Misconfigured are the routes whose request failed for a reason of their configuration.
	Misconfigured []RouteProblem
	// Unverified are the routes it could not check: the server down, a timeout.
	Unverified []RouteProblem
	// onlyUnverified: nothing was found wrong, some routes could not be checked.
	onlyUnverified bool
}

// RouteProblem is one route Verify names: a deployment asked for a model, and what it answered.
type RouteProblem struct {
	Deployment, Model string
	Err               *providers.Error
}

// ErrUnverified is matched, with errors.Is, by a *VerifyError that found nothing wrong but could
// not check some routes.
var ErrUnverified = errors.New("client: some routes could not be verified")

func (e *VerifyError) Error() string {
	var b strings.Builder
	if len(e.Misconfigured) > 0 {
		b.WriteString("client: the configuration fails on ")
		for i, p := range e.Misconfigured {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(p.String())
		}
	}
	if len(e.Unverified) > 0 {
		if b.Len() > 0 {
			b.WriteString(" (and could not verify ")
		} else {
			b.WriteString("client: could not verify ")
		}
		for i, p := range e.Unverified {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(p.String())
		}
		if len(e.Misconfigured) > 0 {
			b.WriteString(")")
		}
	}
	return b.String()
}

// Is matches ErrUnverified when Verify found nothing wrong, only routes it could not check.
func (e *VerifyError) Is(target error) bool { return target == ErrUnverified && e.onlyUnverified }

// String names the route and what it answered.
func (p RouteProblem) String() string {
	what := p.Deployment
	if p.Model != "" {
		what += " for model " + p.Model
	}
	return what + ": " + p.Err.Error()
}
