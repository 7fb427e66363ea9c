package client

import (
	"fmt"
	"slices"

	"github.com/steadyllm/steady/providers"
)

// contextWindow is what a provider declares of its models' context windows.
type contextWindow struct {
	all     int            // every model's, 0 when undeclared
	byModel map[string]int // a model's own
}

// maxContextWindow bounds a declared context window: far beyond any model's.
const maxContextWindow = 100_000_000

// WithContextWindow declares the context window, in tokens, of provider name's models: window
// for every model (0: undeclared), and byModel for the models that differ (a provider that
// serves several). The chain uses it to fail over on a prompt too long: after a route answers
// context_too_long, only routes that declare a larger window are tried (routes that declare
// none are skipped); routes whose window is below the call's estimate (client.EstimateTokens:
// the prompt and the most it may answer) are skipped; and a call that no route of the chain or
// of its context-window fallback (WithFallbackOn(providers.KindContextTooLong, …)) can hold —
// every one declares a window, and the estimate exceeds them all — is refused with
// context_too_long before anything is sent. Values must be 0..100000000.
func WithContextWindow(name string, window int, byModel map[string]int) Option {
	return func(b *builder) error {
		if b.spec(name) == nil {
			return fmt.Errorf("client: WithContextWindow: unknown provider %q", name)
		}
		if window < 0 || window > maxContextWindow {
			return fmt.Errorf("client: WithContextWindow(%q, %d): must be between 0 and %d", name, window, maxContextWindow)
		}
		cw := contextWindow{all: window, byModel: map[string]int{}}
		for m, n := range byModel {
			if n < 0 || n > maxContextWindow {
				return fmt.Errorf("client: WithContextWindow(%q): model %q: %d must be between 0 and %d", name, m, n, maxContextWindow)
			}
			cw.byModel[m] = n
		}
		if b.c.windows == nil {
			b.c.windows = map[string]contextWindow{}
		}
		b.c.windows[name] = cw
		return nil
	}
}

// windowOf returns the context window provider name declares for model, 0 when undeclared.
func (c *Client) windowOf(name, model string) int {
	cw, ok := c.windows[name]
	if !ok {
		return 0
	}
	if n, ok := cw.byModel[model]; ok {
		return n
	}
	return cw.all
}

// WithFallbackOn sends a call that fails with kind to the providers listed, in order (those it
// has not tried yet), instead of what is left of its chain — as LiteLLM's context-window and
// content-policy fallbacks do: a refusal (providers.KindRefused) or a content filter, which
// stop the chain by default, can go to another provider; a prompt too long to a provider with
// a larger context window. WithFallbackOn(providers.KindContextTooLong, "large") is a
// gateway's context-window fallback in one line: a prompt too long for the chain goes to
// "large" whether a route answered context_too_long or was skipped because its declared window
// is too small, and "large" need declare no window. An empty list stops the chain on that
// kind. The providers must be providers of the client. The caller's own cancellation always
// stops the call.
func WithFallbackOn(kind providers.ErrorKind, names ...string) Option {
	return func(b *builder) error {
		if kind == providers.KindCanceled || kind == "" {
			return fmt.Errorf("client: WithFallbackOn(%q): a call the caller canceled never goes on", kind)
		}
		if kind == providers.KindBudgetExhausted {
			return fmt.Errorf("client: WithFallbackOn(%q): a budget refuses a call before any provider is asked, so "+
				"there is no chain to go on (give the budget a downgrade instead)", kind)
		}
		if b.c.fallbackOn == nil {
			b.c.fallbackOn = map[providers.ErrorKind][]string{}
		}
		b.c.fallbackOn[kind] = slices.Clone(names)
		return nil
	}
}

// checkFallbackOn reports FallbackOn lists that name unknown providers, once the providers are
// known.
func (c *Client) checkFallbackOn() []error {
	var errs []error
	for kind, names := range c.fallbackOn {
		for i, n := range names {
			e := c.lookup(n)
			if e == nil {
				errs = append(errs, fmt.Errorf("client: WithFallbackOn(%q): unknown provider %q", kind, n))
				continue
			}
			names[i] = e.name
		}
	}
	return errs
}
