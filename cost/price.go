package cost

import (
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/steadyllm/steady/providers"
)

// Price is what one model costs: the token prices per million tokens, the image price per
// image, all in the currency of the table the price belongs to. A token price applies to
// the tokens of its kind only: Input to the prompt tokens neither read from nor written to
// the prompt cache, CachedInput to those read from it, CacheWrite to those written to it;
// Output to the answer's tokens but its reasoning, Reasoning to those. Image is charged per
// image part of the request, for providers that bill images apart from tokens (leave it 0 for
// those that count an image as input tokens, as OpenAI and Anthropic do: it would count twice).
//
// The zero Price is free. PerMillion fills the cache and reasoning prices from the input and
// output ones, as most tables do.
type Price struct {
	Input, CachedInput, CacheWrite, Output, Reasoning providers.Money
	Image                                             providers.Money
}

// Bounds of a Price and of the usage it prices.
const (
	// MaxTokenPrice is the highest token price per million tokens: 100 000 units (the
	// dearest models cost well under 1 000 per million).
	MaxTokenPrice = 100_000 * providers.Unit
	// MaxImagePrice is the highest price of one image: 1 000 units.
	MaxImagePrice = 1_000 * providers.Unit
	// MaxUsageTokens bounds each count of a usage that Of prices: a server that reports more
	// tokens than this for one attempt is not believed beyond it.
	MaxUsageTokens = 1_000_000_000
	// MaxImages bounds the images Of prices for one attempt.
	MaxImages = 10_000
)

// PerMillion returns the Price of input and output tokens in units per million tokens
// (PerMillion(2.5, 10) for a model at $2.50 and $10 per million): cached input and cache
// writes at the input price, reasoning at the output price. Each amount is the decimal
// written, exactly (providers.MoneyOf); NaN, infinities and negative amounts become 0 — use
// Validate to refuse them.
func PerMillion(input, output float64) Price {
	in, _ := providers.MoneyOf(max(input, 0))
	out, _ := providers.MoneyOf(max(output, 0))
	return Price{Input: in, CachedInput: in, CacheWrite: in, Output: out, Reasoning: out}
}

// Validate reports every amount of p outside its range, naming the field.
func (p Price) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    providers.Money
		max  providers.Money
		per  string
	}{
		{"Input", p.Input, MaxTokenPrice, "per million tokens"}, {"CachedInput", p.CachedInput, MaxTokenPrice, "per million tokens"},
		{"CacheWrite", p.CacheWrite, MaxTokenPrice, "per million tokens"}, {"Output", p.Output, MaxTokenPrice, "per million tokens"},
		{"Reasoning", p.Reasoning, MaxTokenPrice, "per million tokens"}, {"Image", p.Image, MaxImagePrice, "per image"},
	} {
		if f.v < 0 || f.v > f.max {
			errs = append(errs, fmt.Errorf("%s %s: must be between 0 and %s %s", f.name, f.v, f.max, f.per))
		}
	}
	return errors.Join(errs...)
}

// Of returns the cost of usage u and of images image parts at p, rounded once to the
// nano-unit (half up): the token counts are multiplied by their prices in 128-bit integers and
// summed before the one division by a million, so no call loses more than half a nano-unit.
// Counts are taken as a server may send them: each is bounded to [0, MaxUsageTokens] (images
// to [0, MaxImages]), the cached and cache-written tokens to the input, the reasoning tokens
// to the output. p is assumed valid (Validate); a negative price counts as 0.
func (p Price) Of(u providers.Usage, images int) providers.Money {
	in, out := clampTokens(u.InputTokens), clampTokens(u.OutputTokens)
	cached := min(clampTokens(u.CachedInputTokens), in)
	written := min(clampTokens(u.CacheWriteInputTokens), in-cached)
	reasoning := min(clampTokens(u.ReasoningTokens), out)
	var acc wide
	acc.addProduct(uint64(in-cached-written), p.Input)
	acc.addProduct(uint64(cached), p.CachedInput)
	acc.addProduct(uint64(written), p.CacheWrite)
	acc.addProduct(uint64(out-reasoning), p.Output)
	acc.addProduct(uint64(reasoning), p.Reasoning)
	m := acc.perMillion()
	if images > 0 && p.Image > 0 {
		m = m.Add(providers.Money(min(images, MaxImages)) * p.Image)
	}
	return m
}

// Tokens returns the cost of input prompt tokens (none cached) and output answer tokens at p:
// Of for an estimate.
func (p Price) Tokens(input, output, images int) providers.Money {
	return p.Of(providers.Usage{InputTokens: input, OutputTokens: output}, images)
}

func clampTokens(n int) int { return min(max(n, 0), MaxUsageTokens) }

// wide is an unsigned 128-bit accumulator of token × price products.
type wide struct{ hi, lo uint64 }

func (w *wide) addProduct(tokens uint64, price providers.Money) {
	if tokens == 0 || price <= 0 {
		return
	}
	hi, lo := bits.Mul64(tokens, uint64(price))
	var carry uint64
	w.lo, carry = bits.Add64(w.lo, lo, 0)
	w.hi += hi + carry
}

// perMillion divides the sum by a million, rounding half up. The bounds on counts and prices
// keep the sum below 5·10²³ (hi below a million, as Div64 needs) and the quotient in int64.
func (w wide) perMillion() providers.Money {
	const million = 1_000_000
	if w.hi >= million {
		return providers.MaxMoney // unreachable within the bounds; saturate rather than panic
	}
	q, r := bits.Div64(w.hi, w.lo, million)
	if r*2 >= million {
		q++
	}
	if q > uint64(providers.MaxMoney) {
		return providers.MaxMoney
	}
	return providers.Money(q)
}

// Entry is one line of a price table: the Price of Model at Provider. Provider is the name the
// client knows the provider by ("openai", "claude"; deployments share their provider's
// prices), or "*" for any provider. Model is a model name, matched exactly, or a prefix ending
// in "*" ("gpt-4o-2024-*", "claude-sonnet-4*"); "*" alone matches every model.
type Entry struct {
	Provider, Model string
	Price           Price
}

// Bounds of a table.
const (
	// MaxEntries is the most lines a table may have.
	MaxEntries = 10_000
	// MaxNameBytes bounds a provider or model name of a table.
	MaxNameBytes = 256
)

// Prices is a price table in one currency. It is immutable and safe for concurrent use; Lookup
// allocates nothing.
type Prices struct {
	currency string
	exact    map[priceKey]Price
	prefixes []prefixPrice // longest first; at one length, a named provider before "*"
}

type priceKey struct{ provider, model string }

type prefixPrice struct {
	provider, prefix string
	price            Price
}

// NewPrices builds a table in currency (an ISO 4217-style code of 3 to 8 capital letters:
// "USD", "EUR") from entries, which it checks all at once: names not empty, at most
// MaxNameBytes, printable; prices within range; no line twice; at most MaxEntries lines.
func NewPrices(currency string, entries []Entry) (*Prices, error) {
	var errs []error
	if !validCurrency(currency) {
		errs = append(errs, fmt.Errorf("cost: currency %q: must be a code of 3 to 8 capital letters, such as \"USD\"", currency))
	}
	if len(entries) > MaxEntries {
		errs = append(errs, fmt.Errorf("cost: %d price entries: at most %d", len(entries), MaxEntries))
		entries = entries[:MaxEntries]
	}
	t := &Prices{currency: currency, exact: make(map[priceKey]Price, len(entries))}
	seen := map[priceKey]bool{}
	for _, e := range entries {
		where := e.Provider + "/" + e.Model
		if msg := checkName(e.Provider); msg != "" {
			errs = append(errs, fmt.Errorf("cost: price %q: provider %s", where, msg))
			continue
		}
		if msg := checkName(e.Model); msg != "" {
			errs = append(errs, fmt.Errorf("cost: price %q: model %s", where, msg))
			continue
		}
		if err := e.Price.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("cost: price %q: %w", where, err))
			continue
		}
		k := priceKey{e.Provider, e.Model}
		if seen[k] {
			errs = append(errs, fmt.Errorf("cost: price %q: given twice", where))
			continue
		}
		seen[k] = true
		if prefix, ok := strings.CutSuffix(e.Model, "*"); ok {
			t.prefixes = append(t.prefixes, prefixPrice{provider: e.Provider, prefix: prefix, price: e.Price})
			continue
		}
		t.exact[k] = e.Price
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.SortStableFunc(t.prefixes, func(a, b prefixPrice) int {
		if c := cmp.Compare(len(b.prefix), len(a.prefix)); c != 0 {
			return c
		}
		return cmp.Compare(boolInt(a.provider == "*"), boolInt(b.provider == "*"))
	})
	return t, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkName returns what is wrong with a provider or model name of a table, "" when nothing.
func checkName(s string) string {
	switch {
	case s == "":
		return "is empty"
	case len(s) > MaxNameBytes:
		return fmt.Sprintf("is %d bytes long: at most %d", len(s), MaxNameBytes)
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return "has a control character"
	}
	return ""
}

func validCurrency(c string) bool {
	if len(c) < 3 || len(c) > 8 {
		return false
	}
	for i := 0; i < len(c); i++ {
		if c[i] < 'A' || c[i] > 'Z' {
			return false
		}
	}
	return true
}

// Currency returns the table's currency code.
func (t *Prices) Currency() string { return t.currency }

// Lookup returns the price of model at provider: an exact line for the provider, else an
// exact line for any provider ("*"), else the line of the longest prefix that matches (at
// one length, the provider's before any provider's). ok is false when no line matches. A nil
// table has no price.
func (t *Prices) Lookup(provider, model string) (Price, bool) {
	if t == nil || model == "" {
		return Price{}, false
	}
	if p, ok := t.exact[priceKey{provider, model}]; ok {
		return p, true
	}
	if p, ok := t.exact[priceKey{"*", model}]; ok {
		return p, true
	}
	for i := range t.prefixes {
		e := &t.prefixes[i]
		if (e.provider == provider || e.provider == "*") && strings.HasPrefix(model, e.prefix) {
			return e.price, true
		}
	}
	return Price{}, false
}

// Entries returns the table's lines, exact ones first, each group sorted by provider and
// model.
func (t *Prices) Entries() []Entry {
	if t == nil {
		return nil
	}
	out := make([]Entry, 0, len(t.exact)+len(t.prefixes))
	for k, p := range t.exact {
		out = append(out, Entry{Provider: k.provider, Model: k.model, Price: p})
	}
	slices.SortFunc(out, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.Model, b.Model))
	})
	n := len(out)
	for _, e := range t.prefixes {
		out = append(out, Entry{Provider: e.provider, Model: e.prefix + "*", Price: e.price})
	}
	slices.SortFunc(out[n:], func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.Model, b.Model))
	})
	return out
}
