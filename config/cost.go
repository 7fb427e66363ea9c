package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/providers"
)

// LLM.Cost prices calls and keeps budgets (package cost, client.WithPrices and
// client.WithBudgets):
//
//	"Cost": {
//	  "Currency": "USD",
//	  "Prices": {
//	    "openai": {"gpt-4o": {"Input": 2.5, "CachedInput": 1.25, "Output": 10},
//	               "gpt-4o-mini*": {"Input": 0.15, "Output": 0.6}},
//	    "claude": {"claude-sonnet-4-5": {"Input": 3, "CacheWrite": 3.75, "CachedInput": 0.3, "Output": 15}}
//	  }
//	}
//
// Prices are per million tokens (Image: per image) in Currency, decimals as written (a price
// is exact to the nano-unit). The keys of Prices are provider names of LLM.Providers (a
// provider made of deployments by the name they form), or "*" for any provider; the keys
// under them are model names, exact or a prefix ending in "*". From the environment, each
// price is one variable: LLM__Cost__Prices__openai__gpt-4o__Input=2.5.

// The keys of LLM.Cost and of its objects.
const (
	keyCost        = "Cost"
	keyCurrency    = "Currency"
	keyPrices      = "Prices"
	keyInput       = "Input"
	keyCachedInput = "CachedInput"
	keyCacheWrite  = "CacheWrite"
	keyOutput      = "Output"
	keyReasoning   = "Reasoning"
	keyImage       = "Image"

	keyBudgets     = "Budgets"
	keyTimeZone    = "TimeZone"
	keyMaxKeys     = "MaxKeys"
	keyFailClosed  = "FailClosed"
	keyPer         = "Per"
	keyWindow      = "Window"
	keyLimit       = "Limit"
	keyLimitsByKey = "Limits"
	keyWarnAt      = "WarnAt"
	keyDowngradeAt = "DowngradeAt"
	keyRefuseAt    = "RefuseAt"
	keyNeverRefuse = "NeverRefuse"
	keyDowngrade   = "Downgrade"
	keyMode        = "Mode"
	keyProvidersOf = "Providers"
)

// costFields describes the leaves of LLM.Cost; Prices (and Budgets) are objects of their own.
var costFields = map[string]kind{
	keyCurrency:   kindString,
	keyTimeZone:   kindString,
	keyMaxKeys:    kindInt,
	keyFailClosed: kindBool,
}

// budgetFields describes the leaves of a budget; Limits and Downgrade are objects of their own.
var budgetFields = map[string]kind{
	keyPer:         kindString,
	keyWindow:      kindString,
	keyLimit:       kindNumber,
	keyWarnAt:      kindNumber,
	keyDowngradeAt: kindNumber,
	keyRefuseAt:    kindNumber,
	keyNeverRefuse: kindBool,
	keyMode:        kindString,
}

// downgradeFields describes a budget's Downgrade.
var downgradeFields = map[string]kind{
	keyModel:       kindString,
	keyProvidersOf: kindStringList,
	keyPolicy:      kindString,
}

var (
	costKeys      = append(sortedKeys(costFields), keyPrices, keyBudgets)
	priceKeys     = []string{keyInput, keyCachedInput, keyCacheWrite, keyOutput, keyReasoning, keyImage}
	budgetKeys    = append(sortedKeys(budgetFields), keyLimitsByKey, keyDowngrade)
	downgradeKeys = sortedKeys(downgradeFields)
)

// Cost is LLM.Cost.
type Cost struct {
	// Currency is the currency of every price and budget: a code of 3 to 8 capital letters
	// ("USD", the default, "EUR").
	Currency string
	// Prices are the lines of the price table (cost.NewPrices), sorted by provider and model;
	// each provider is a provider of the configuration, spelled as declared, or "*". A price
	// the configuration leaves out of a line is filled in: CachedInput and CacheWrite from
	// Input, Reasoning from Output, Image as 0. Input and Output are required.
	Prices []cost.Entry
	// Budgets are the budgets of LLM.Cost.Budgets (cost.Budget), sorted by name: each named
	// by its key, its Downgrade's providers spelled as declared.
	Budgets []cost.Budget
	// TimeZone is the IANA name of the zone the budgets' windows follow ("UTC" by default),
	// Location the zone itself.
	TimeZone string
	Location *time.Location
	// MaxKeys bounds the keys each budget keeps in its current windows (0: cost.DefaultMaxKeys).
	// Allowed: 0..cost.MaxMaxKeys.
	MaxKeys int
	// FailClosed refuses the calls the budgets cannot account for (a new key past MaxKeys,
	// the shared store unreachable when an instance needs more of the fleet's budget) instead
	// of letting them go uncounted.
	FailClosed bool
}

// cost normalizes LLM.Cost from a file. It returns nil when v is not an object.
func (p *jsonParser) cost(path string, v any) map[string]any {
	m, ok := p.object(path, v)
	if !ok {
		return nil
	}
	out := map[string]any{}
	p.eachKey(path, m, costKeys, p.unknownKey(costKeys), func(path, canon string, v any) {
		var nv any
		switch canon {
		case keyPrices:
			if sub := p.prices(path, v); sub != nil {
				nv = sub
			}
		case keyBudgets:
			if sub := p.budgets(path, v); sub != nil {
				nv = sub
			}
		default:
			nv = p.leaf(path, costFields[canon], v)
		}
		if nv != nil {
			out[canon] = nv
		}
	})
	return out
}

// prices normalizes LLM.Cost.Prices: provider → model → price fields, each a number.
func (p *jsonParser) prices(path string, v any) map[string]any {
	m, ok := p.object(path, v)
	if !ok {
		return nil
	}
	out := map[string]any{}
	for _, provider := range sortedKeys(m) {
		ppath := joinPath(path, provider)
		if !validMapKey(provider) {
			p.problem(ppath, nil, "a provider name must be non-empty, without control characters")
			continue
		}
		models, ok := p.object(ppath, m[provider])
		if !ok {
			continue
		}
		mout := map[string]any{}
		for _, model := range sortedKeys(models) {
			mpath := joinPath(ppath, model)
			if !validMapKey(model) {
				p.problem(mpath, nil, "a model name must be non-empty, without control characters")
				continue
			}
			fields, ok := p.object(mpath, models[model])
			if !ok {
				continue
			}
			fout := map[string]any{}
			p.eachKey(mpath, fields, priceKeys, p.unknownKey(priceKeys), func(path, canon string, v any) {
				if nv := p.leaf(path, kindNumber, v); nv != nil {
					fout[canon] = nv
				}
			})
			mout[model] = fout
		}
		out[provider] = mout
	}
	return out
}

// cost resolves the segments of a variable under LLM__Cost from segment i on.
func (w *envWalk) cost(i int) (envTarget, bool) {
	field, ok := w.match(i, costKeys)
	if !ok {
		return envTarget{}, false
	}
	if field == keyBudgets {
		return w.budget(i + 1)
	}
	if field != keyPrices {
		return w.leaf(i+1, costFields[field])
	}
	example := "<provider>__<model>__" + keyInput
	if !w.more(i+1, "a map of providers' prices", example) || !w.userKey(i+1, "a provider name") {
		return envTarget{}, false
	}
	if !w.more(i+2, "a provider's prices", "<model>__"+keyInput) || !w.userKey(i+2, "") {
		return envTarget{}, false
	}
	if _, ok := w.match(i+3, priceKeys); !ok {
		return envTarget{}, false
	}
	return w.leaf(i+4, kindNumber)
}

// userKey appends segment i, a key the user chooses (a provider's name, a model, a budget's
// name), to the walk's path: spelled as the files spell it when they have it in another case
// and caseless is set ("" for a model name, which is case-sensitive and kept as written).
func (w *envWalk) userKey(i int, caseless string) bool {
	key := w.segs[i]
	if !validMapKey(key) {
		w.fail(i, "a key must be a non-empty name without control characters")
		return false
	}
	if caseless != "" {
		key = w.r.spelling(w.path, key)
	}
	w.path = append(w.path, key)
	return true
}

// spelling returns the key of the object at path in the files' tree that matches key ignoring
// case, or key itself when there is none.
func (r *envReader) spelling(path []string, key string) string {
	var node any = r.base
	for _, p := range path {
		m, _ := node.(map[string]any)
		node = m[p]
	}
	m, _ := node.(map[string]any)
	if _, ok := m[key]; ok {
		return key
	}
	for _, k := range sortedKeys(m) {
		if strings.EqualFold(k, key) {
			return k
		}
	}
	return key
}

// buildCost decodes and checks LLM.Cost; callable are the names calls are priced under (the
// providers that are no deployment, and the providers deployments form).
func buildCost(ps *problems, tree map[string]any, callable, policies index, deploymentOf map[string]string) *Cost {
	path := keyLLM + "." + keyCost
	c := &Cost{Currency: "USD"}
	if s, ok := tree[keyCurrency].(string); ok {
		c.Currency = strings.TrimSpace(s)
		if _, err := cost.NewPrices(c.Currency, nil); err != nil {
			ps.add(Problem{Path: path + "." + keyCurrency, Value: s, Allowed: "must be a currency code of 3 to 8 capital letters, such as \"USD\" (the default)"})
		}
	}
	prices, _ := tree[keyPrices].(map[string]any)
	c.Prices = buildPrices(ps, path+"."+keyPrices, prices, callable, deploymentOf)
	c.TimeZone, c.Location = "UTC", time.UTC
	if s, ok := tree[keyTimeZone].(string); ok && strings.TrimSpace(s) != "" {
		loc, err := time.LoadLocation(strings.TrimSpace(s))
		if err != nil || strings.TrimSpace(s) == "Local" {
			ps.add(Problem{Path: path + "." + keyTimeZone, Value: s, Allowed: "must be an IANA time zone, such as \"Europe/Paris\" or \"UTC\" (the default)"})
		} else {
			c.TimeZone, c.Location = loc.String(), loc
		}
	}
	c.MaxKeys, _ = tree[keyMaxKeys].(int)
	if c.MaxKeys < 0 || c.MaxKeys > cost.MaxMaxKeys {
		ps.add(Problem{Path: path + "." + keyMaxKeys, Value: c.MaxKeys, Allowed: fmt.Sprintf("must be between 0 (the default, %d) and %d",
			cost.DefaultMaxKeys, cost.MaxMaxKeys)})
	}
	c.FailClosed, _ = tree[keyFailClosed].(bool)
	budgets, _ := tree[keyBudgets].(map[string]any)
	c.Budgets = buildBudgets(ps, path+"."+keyBudgets, budgets, callable, policies)
	return c
}

// buildPrices decodes LLM.Cost.Prices into lines of a price table.
func buildPrices(ps *problems, path string, tree map[string]any, callable index, deploymentOf map[string]string) []cost.Entry {
	var out []cost.Entry
	seen := map[[2]string]string{} // resolved provider and model → the key that set it
	for _, key := range sortedKeys(tree) {
		ppath := joinPath(path, key)
		provider := key
		switch c, ok := callable.lookup(key); {
		case key == "*":
		case ok:
			provider = c
		case deploymentOf[strings.ToLower(key)] != "":
			ps.add(Problem{Path: ppath, Allowed: fmt.Sprintf("is a deployment of %s: calls are priced under the provider "+
				"its deployments form, so give the price under %s", show(deploymentOf[strings.ToLower(key)]), show(deploymentOf[strings.ToLower(key)]))})
			continue
		default:
			ps.add(Problem{Path: ppath, Allowed: "must name a provider of LLM.Providers, or \"*\" for any provider" +
				ps.didYouMean(key, callable.sorted)})
			continue
		}
		models, _ := tree[key].(map[string]any)
		for _, model := range sortedKeys(models) {
			mpath := joinPath(ppath, model)
			if first, dup := seen[[2]string{provider, model}]; dup {
				ps.add(Problem{Path: mpath, Allowed: fmt.Sprintf("set twice, under %s and %s: provider names are case-insensitive", show(first), show(key))})
				continue
			}
			seen[[2]string{provider, model}] = key
			fields, _ := models[model].(map[string]any)
			if p, ok := buildPrice(ps, mpath, fields); ok {
				out = append(out, cost.Entry{Provider: provider, Model: model, Price: p})
			}
		}
	}
	slices.SortFunc(out, func(a, b cost.Entry) int {
		if c := strings.Compare(a.Provider, b.Provider); c != 0 {
			return c
		}
		return strings.Compare(a.Model, b.Model)
	})
	return out
}

// buildPrice decodes one price, filling in what the configuration leaves out.
func buildPrice(ps *problems, path string, fields map[string]any) (cost.Price, bool) {
	good := true
	money := func(key string, limit providers.Money, per string) (providers.Money, bool) {
		f, ok := fields[key].(float64)
		if !ok {
			return 0, false
		}
		m, fine := providers.MoneyOf(f)
		// Written so that a NaN, had it come in, would fail too.
		if !fine || !(f >= 0) || m > limit {
			ps.add(Problem{Path: path + "." + key, Value: f, Allowed: fmt.Sprintf("must be between 0 and %s %s", limit, per)})
			good = false
		}
		return m, true
	}
	const perM = "per million tokens"
	var p cost.Price
	var has bool
	for _, req := range []string{keyInput, keyOutput} {
		if _, ok := fields[req]; !ok {
			ps.add(Problem{Path: path + "." + req, Allowed: "is required: the price " + perM + " (0 for free)"})
			good = false
		}
	}
	p.Input, _ = money(keyInput, cost.MaxTokenPrice, perM)
	p.Output, _ = money(keyOutput, cost.MaxTokenPrice, perM)
	if p.CachedInput, has = money(keyCachedInput, cost.MaxTokenPrice, perM); !has {
		p.CachedInput = p.Input
	}
	if p.CacheWrite, has = money(keyCacheWrite, cost.MaxTokenPrice, perM); !has {
		p.CacheWrite = p.Input
	}
	if p.Reasoning, has = money(keyReasoning, cost.MaxTokenPrice, perM); !has {
		p.Reasoning = p.Output
	}
	p.Image, _ = money(keyImage, cost.MaxImagePrice, "per image")
	return p, good
}
