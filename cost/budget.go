package cost

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/steadyllm/steady/providers"
)

// Budget limits what calls spend per key over a window, with tiers of action as the spend
// grows: past WarnAt of the limit an event (EventWarn); past DowngradeAt calls go to the
// Downgrade (a cheaper model, other providers, another policy) from the next call on; a call
// whose pre-flight estimate would take the spend past RefuseAt of the limit is refused before
// it is sent (a *providers.Error of kind budget_exhausted whose RetryAfter is the time until
// the window ends).
//
// The spend is kept per key of the dimension Per names: each call says its key
// (client.WithBudgetKey, client.WithTenant for "tenant"), and each key has its own spend and
// limit (Limit, or its own in Limits). Calls that name no key share the key "". A Budget with
// no Per keeps one spend for every call.
//
// A budget in Shadow mode decides exactly as it would in enforce mode and charges what the
// call would have cost had it been enforced — nothing for a call it would refuse, the served
// usage at the downgrade's price for a call it would downgrade — but applies nothing: it
// reports its decisions (EventDecision with Shadow set, the metrics), so a budget can be tried
// on real traffic before it is enforced.
type Budget struct {
	// Name names the budget in events, errors, metrics and the shared store: 1 to 64 letters,
	// digits and . _ -.
	Name string
	// Per is the dimension the spend is kept per ("tenant", "team", "api_key"): 1 to 64
	// letters, digits and . _ -; "" keeps one spend for every call.
	Per string
	// Window is the period the spend is kept over.
	Window Window
	// Limit is each key's limit in the window, above 0 and at most MaxLimit; Limits gives
	// some keys their own (at most MaxLimitKeys of them).
	Limit  providers.Money
	Limits map[string]providers.Money
	// WarnAt, DowngradeAt and RefuseAt are the tiers, as fractions of the key's limit: 0 for
	// none but RefuseAt, whose 0 means 1 (refuse at the limit itself). Each is at most
	// MaxTier. NeverRefuse turns refusal off: the budget only warns and downgrades.
	WarnAt, DowngradeAt, RefuseAt float64
	NeverRefuse                   bool
	// Downgrade is where calls go once the spend passed DowngradeAt; required with it.
	Downgrade Downgrade
	// Shadow records what the budget would do without doing it (see above).
	Shadow bool
}

// Downgrade is what a call is changed to once its key's spend passed a budget's downgrade
// tier: at least one of its fields is set; the others leave the call as it was.
type Downgrade struct {
	// Model is the model to ask instead of the request's (for the chain's first provider;
	// later ones map it as for any call).
	Model string
	// Providers are the providers to try instead of the call's chain, in order.
	Providers []string
	// Policy is the named policy (client.WithPolicies) the call runs under.
	Policy string
}

// IsZero reports whether d changes nothing.
func (d Downgrade) IsZero() bool { return d.Model == "" && len(d.Providers) == 0 && d.Policy == "" }

// Bounds of budgets and of the keys calls give.
const (
	// MaxLimit is the highest limit of one key in one window: a billion units.
	MaxLimit = 1_000_000_000 * providers.Unit
	// MaxTier is the highest tier, as a fraction of the limit.
	MaxTier = 10.0
	// MaxLimitKeys bounds the keys a budget gives their own limit (Limits).
	MaxLimitKeys = 100_000
	// MaxKeyBytes bounds a key a call gives (client.WithBudgetKey) and a key of Limits.
	MaxKeyBytes = 128
	// MaxBudgets bounds the budgets of a ledger.
	MaxBudgets = 64
)

// Validate reports every field of b out of range, naming it.
func (b Budget) Validate() error {
	var errs []error
	add := func(field string, value any, allowed string) {
		errs = append(errs, fmt.Errorf("cost: budget %q: %s %v: %s", b.Name, field, value, allowed))
	}
	if !validName(b.Name) {
		add("Name", fmt.Sprintf("%q", b.Name), "must be 1 to 64 letters, digits and . _ -")
	}
	if b.Per != "" && !validName(b.Per) {
		add("Per", fmt.Sprintf("%q", b.Per), "must be 1 to 64 letters, digits and . _ -, or empty (one spend for every call)")
	}
	if b.Window < Minute || b.Window > Month {
		add("Window", int(b.Window), "must be one of "+strings.Join(Windows, ", "))
	}
	if b.Limit <= 0 || b.Limit > MaxLimit {
		add("Limit", b.Limit, fmt.Sprintf("must be above 0 and at most %s", MaxLimit))
	}
	if len(b.Limits) > MaxLimitKeys {
		add("Limits", len(b.Limits), fmt.Sprintf("keys: at most %d", MaxLimitKeys))
	}
	keys := make([]string, 0, len(b.Limits))
	for k := range b.Limits {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if msg := CheckKey(k); msg != "" {
			add("Limits key", fmt.Sprintf("%q", clip(k)), msg)
		} else if v := b.Limits[k]; v <= 0 || v > MaxLimit {
			add("Limits["+k+"]", v, fmt.Sprintf("must be above 0 and at most %s", MaxLimit))
		}
	}
	for _, t := range []struct {
		name string
		v    float64
	}{{"WarnAt", b.WarnAt}, {"DowngradeAt", b.DowngradeAt}, {"RefuseAt", b.RefuseAt}} {
		// Written so that a NaN fails too.
		if !(t.v >= 0 && t.v <= MaxTier) {
			add(t.name, t.v, fmt.Sprintf("must be between 0 and %v (a fraction of the limit; 0: none)", MaxTier))
		}
	}
	refuse := b.refuseAt()
	if !b.NeverRefuse {
		for _, t := range []struct {
			name string
			v    float64
		}{{"WarnAt", b.WarnAt}, {"DowngradeAt", b.DowngradeAt}} {
			if t.v > refuse {
				add(t.name, t.v, fmt.Sprintf("must not be above RefuseAt (%v): the call would be refused first", refuse))
			}
		}
	}
	switch {
	case b.DowngradeAt > 0 && b.Downgrade.IsZero():
		add("Downgrade", "(none)", "is required with DowngradeAt: a Model, Providers or a Policy")
	case b.DowngradeAt == 0 && !b.Downgrade.IsZero():
		add("DowngradeAt", 0, "is required with a Downgrade: the fraction of the limit past which calls go to it")
	}
	return errors.Join(errs...)
}

// refuseAt is the refuse tier: RefuseAt, or 1 when it is 0.
func (b *Budget) refuseAt() float64 {
	if b.RefuseAt == 0 {
		return 1
	}
	return b.RefuseAt
}

// limitOf returns key's limit.
func (b *Budget) limitOf(key string) providers.Money {
	if v, ok := b.Limits[key]; ok {
		return v
	}
	return b.Limit
}

// tierOf returns a fraction f of limit, in Money (rounded down), saturating.
func tierOf(limit providers.Money, f float64) providers.Money {
	v := math.Floor(float64(limit) * f)
	if v >= float64(providers.MaxMoney) {
		return providers.MaxMoney
	}
	return providers.Money(v)
}

// validName reports whether s can name a budget or a dimension: 1 to 64 of [A-Za-z0-9._-].
func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// CheckKey returns what is wrong with a key a call gives (client.WithBudgetKey) or a budget
// names, "" when nothing: 1 to MaxKeyBytes bytes of valid UTF-8 without control characters.
func CheckKey(k string) string {
	switch {
	case k == "":
		return "must not be empty"
	case len(k) > MaxKeyBytes:
		return fmt.Sprintf("is %d bytes long: at most %d", len(k), MaxKeyBytes)
	case !utf8.ValidString(k):
		return "is not valid UTF-8"
	case strings.ContainsFunc(k, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }):
		return "has a control character"
	}
	return ""
}

// clip bounds a caller's text for an error message.
func clip(s string) string {
	if len(s) <= 40 {
		return s
	}
	return s[:40] + "…"
}
