package config

import (
	"fmt"
	"strings"

	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/providers"
)

// LLM.Cost.Budgets keeps budgets of what calls spend (cost.Budget, client.WithBudgets):
//
//	"Budgets": {
//	  "tenant-daily": {
//	    "Per": "tenant", "Window": "day", "Limit": 5, "Limits": {"acme": 50},
//	    "WarnAt": 0.8, "DowngradeAt": 0.9, "Downgrade": {"Model": "gpt-4o-mini"},
//	    "Mode": "shadow"
//	  }
//	}
//
// Amounts are in LLM.Cost.Currency; the tiers are fractions of the limit. From the
// environment each field is a variable (LLM__Cost__Budgets__tenant-daily__Limit=5), a key's
// limit too (LLM__Cost__Budgets__tenant-daily__Limits__acme=50), and the downgrade's
// providers a list set by index (LLM__Cost__Budgets__tenant-daily__Downgrade__Providers__0=openai).

// The modes of a budget.
const (
	ModeEnforce = "enforce"
	ModeShadow  = "shadow"
)

// budgets normalizes LLM.Cost.Budgets: name → fields.
func (p *jsonParser) budgets(path string, v any) map[string]any {
	m, ok := p.object(path, v)
	if !ok {
		return nil
	}
	out := map[string]any{}
	for _, name := range sortedKeys(m) {
		bpath := joinPath(path, name)
		if !validMapKey(name) {
			p.problem(bpath, nil, "a budget name must be non-empty, without control characters")
			continue
		}
		fields, ok := p.object(bpath, m[name])
		if !ok {
			continue
		}
		bout := map[string]any{}
		p.eachKey(bpath, fields, budgetKeys, p.unknownKey(budgetKeys), func(path, canon string, v any) {
			var nv any
			switch canon {
			case keyLimitsByKey:
				if lm, ok := p.object(path, v); ok {
					limits := map[string]any{}
					for _, key := range sortedKeys(lm) {
						if f := p.leaf(joinPath(path, key), kindNumber, lm[key]); f != nil {
							limits[key] = f
						}
					}
					nv = limits
				}
			case keyDowngrade:
				if dm, ok := p.object(path, v); ok {
					d := map[string]any{}
					p.eachKey(path, dm, downgradeKeys, p.unknownKey(downgradeKeys), func(path, canon string, v any) {
						if f := p.leaf(path, downgradeFields[canon], v); f != nil {
							d[canon] = f
						}
					})
					nv = d
				}
			default:
				nv = p.leaf(path, budgetFields[canon], v)
			}
			if nv != nil {
				bout[canon] = nv
			}
		})
		out[name] = bout
	}
	return out
}

// budget resolves the segments of a variable under LLM__Cost__Budgets from segment i on: a
// budget's name, then one of its fields.
func (w *envWalk) budget(i int) (envTarget, bool) {
	if !w.more(i, "a map of budgets", "<budget>__"+keyLimit) || !w.userKey(i, "a budget name") {
		return envTarget{}, false
	}
	field, ok := w.match(i+1, budgetKeys)
	if !ok {
		return envTarget{}, false
	}
	switch field {
	case keyLimitsByKey:
		if !w.more(i+2, "a budget's limits by key", "<key>") || !w.userKey(i+2, "") {
			return envTarget{}, false
		}
		return w.leaf(i+3, kindNumber)
	case keyDowngrade:
		f, ok := w.match(i+2, downgradeKeys)
		if !ok {
			return envTarget{}, false
		}
		if k := downgradeFields[f]; k.isList() {
			return w.list(i+3, k)
		}
		return w.leaf(i+3, downgradeFields[f])
	}
	return w.leaf(i+2, budgetFields[field])
}

// buildBudgets decodes and checks LLM.Cost.Budgets; callable are the providers a downgrade may
// name, policies the policies.
func buildBudgets(ps *problems, path string, tree map[string]any, callable, policies index) []cost.Budget {
	var out []cost.Budget
	for _, name := range sortedKeys(tree) {
		fields, _ := tree[name].(map[string]any)
		if b, ok := buildBudget(ps, joinPath(path, name), name, fields, callable, policies); ok {
			out = append(out, b)
		}
	}
	return out
}

// buildBudget decodes one budget; ok is false when it has a problem.
func buildBudget(ps *problems, path, name string, tree map[string]any, callable, policies index) (cost.Budget, bool) {
	good := true
	add := func(key string, value any, allowed string) {
		ps.add(Problem{Path: path + "." + key, Value: value, Allowed: allowed})
		good = false
	}
	str := func(key string) string { s, _ := tree[key].(string); return strings.TrimSpace(s) }
	num := func(key string) float64 { f, _ := tree[key].(float64); return f }
	b := cost.Budget{Name: name, Per: str(keyPer)}
	if !validBudgetName(name) {
		ps.add(Problem{Path: path, Allowed: "a budget name must be 1 to 64 letters, digits and . _ - (it names the budget in " +
			"metrics and in the shared store)"})
		good = false
	}
	if b.Per != "" && !validBudgetName(b.Per) {
		add(keyPer, b.Per, "must be 1 to 64 letters, digits and . _ - (such as \"tenant\"), or empty: one spend for every call")
	}
	if w := str(keyWindow); w == "" {
		add(keyWindow, nil, "is required: "+oneOf(cost.Windows))
	} else if win, err := cost.ParseWindow(w); err != nil {
		add(keyWindow, w, oneOf(cost.Windows)+ps.didYouMean(w, cost.Windows))
	} else {
		b.Window = win
	}
	limit := func(key, shown string, f float64) providers.Money {
		m, ok := providers.MoneyOf(f)
		if !ok || !(f > 0) || m <= 0 || m > cost.MaxLimit {
			ps.add(Problem{Path: path + "." + shown, Value: f, Allowed: fmt.Sprintf("must be above 0 and at most %s", cost.MaxLimit)})
			good = false
		}
		return m
	}
	if _, ok := tree[keyLimit]; !ok {
		add(keyLimit, nil, "is required: each key's limit in the window, in LLM.Cost.Currency")
	} else {
		b.Limit = limit(keyLimit, keyLimit, num(keyLimit))
	}
	if lm, _ := tree[keyLimitsByKey].(map[string]any); len(lm) > 0 {
		if len(lm) > cost.MaxLimitKeys {
			add(keyLimitsByKey, len(lm), fmt.Sprintf("keys: at most %d", cost.MaxLimitKeys))
		}
		b.Limits = map[string]providers.Money{}
		for _, key := range sortedKeys(lm) {
			shown := joinPath(keyLimitsByKey, key)
			if msg := cost.CheckKey(key); msg != "" {
				add(shown, nil, "a key "+msg)
				continue
			}
			f, _ := lm[key].(float64)
			b.Limits[key] = limit(key, shown, f)
		}
	}
	for _, t := range []struct {
		key string
		v   *float64
	}{{keyWarnAt, &b.WarnAt}, {keyDowngradeAt, &b.DowngradeAt}, {keyRefuseAt, &b.RefuseAt}} {
		*t.v = num(t.key)
		none := "none"
		if t.key == keyRefuseAt {
			none = "1, the limit itself"
		}
		if !(*t.v >= 0 && *t.v <= cost.MaxTier) {
			add(t.key, *t.v, fmt.Sprintf("must be between 0 and %v: a fraction of the limit (0: %s)", cost.MaxTier, none))
		}
	}
	b.NeverRefuse, _ = tree[keyNeverRefuse].(bool)
	switch mode := strings.ToLower(str(keyMode)); mode {
	case "", ModeEnforce:
	case ModeShadow:
		b.Shadow = true
	default:
		add(keyMode, str(keyMode), oneOf([]string{ModeEnforce, ModeShadow}))
	}
	if dm, ok := tree[keyDowngrade].(map[string]any); ok {
		dpath := keyDowngrade + "."
		b.Downgrade.Model, _ = dm[keyModel].(string)
		b.Downgrade.Policy, _ = dm[keyPolicy].(string)
		if b.Downgrade.Policy != "" {
			if c, ok := policies.lookup(b.Downgrade.Policy); ok {
				b.Downgrade.Policy = c
			} else {
				add(dpath+keyPolicy, b.Downgrade.Policy, "must name a policy of LLM.Policies"+ps.didYouMean(b.Downgrade.Policy, policies.sorted))
			}
		}
		list, _ := dm[keyProvidersOf].([]string)
		for i, n := range list {
			if c, ok := callable.lookup(n); ok {
				b.Downgrade.Providers = append(b.Downgrade.Providers, c)
			} else {
				add(fmt.Sprintf("%s%s[%d]", dpath, keyProvidersOf, i), n, "must name a provider of LLM.Providers"+ps.didYouMean(n, callable.sorted))
			}
		}
	}
	if !good {
		return b, false
	}
	// What is left are the relations between fields: the tiers, the downgrade.
	if err := b.Validate(); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			ps.add(Problem{Path: path, Allowed: strings.TrimPrefix(line, fmt.Sprintf("cost: budget %q: ", name))})
		}
		return b, false
	}
	return b, true
}

// validBudgetName reports whether s can name a budget or a dimension (see cost.Budget).
func validBudgetName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
	})
}
