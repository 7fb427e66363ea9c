package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/providers"
)

const costProviders = `"Providers": {
	"openai": {"Dialect": "openai", "APIKeyEnv": "OPENAI_API_KEY"},
	"claude": {"Dialect": "anthropic", "APIKeyEnv": "ANTHROPIC_API_KEY"},
	"east": {"Dialect": "openai", "APIKeyEnv": "OPENAI_API_KEY", "DeploymentOf": "pool"},
	"west": {"Dialect": "openai", "APIKeyEnv": "OPENAI_API_KEY", "DeploymentOf": "pool"}
}, "Fallback": ["openai", "claude", "pool"]`

var costKeysEnv = []string{"OPENAI_API_KEY=sk-test", "ANTHROPIC_API_KEY=sk-ant-test"}

func nanos(t *testing.T, s string) providers.Money {
	t.Helper()
	m, err := providers.ParseMoney(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// LLM.Cost.Prices: each line as written, exactly, the prices left out filled in, the provider
// names resolved to their declared spelling, a provider of deployments under its own name.
func TestCost_PricesFromFileAndEnv(t *testing.T) {
	doc := `{"LLM": {` + costProviders + `, "Cost": {"Currency": "EUR", "Prices": {
		"OpenAI": {"gpt-4o": {"Input": 2.5, "CachedInput": 1.25, "Output": 10}, "gpt-4o-mini*": {"Input": 0.15, "Output": 0.6}},
		"claude": {"claude-sonnet-4-5": {"Input": 3, "CacheWrite": 3.75, "CachedInput": 0.3, "Output": 15, "Reasoning": 15}},
		"pool": {"gpt-4.1": {"Input": 2, "Output": 8, "Image": 0.001}},
		"*": {"*": {"Input": 0.1, "Output": 0.1}}}}}}`
	cfg, err := ParseWithEnv([]byte(doc), []string{costKeysEnv[0], costKeysEnv[1], "LLM__Cost__Prices__openai__gpt-4o__Output=12.5",
		"LLM__Cost__Prices__CLAUDE__claude-haiku-4-5__Input=1", "LLM__Cost__Prices__CLAUDE__claude-haiku-4-5__Output=5"})
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Cost
	if c == nil || c.Currency != "EUR" {
		t.Fatalf("%+v", c)
	}
	want := []cost.Entry{
		{Provider: "*", Model: "*", Price: cost.Price{Input: nanos(t, "0.1"), CachedInput: nanos(t, "0.1"), CacheWrite: nanos(t, "0.1"),
			Output: nanos(t, "0.1"), Reasoning: nanos(t, "0.1")}},
		{Provider: "claude", Model: "claude-haiku-4-5", Price: cost.PerMillion(1, 5)},
		{Provider: "claude", Model: "claude-sonnet-4-5", Price: cost.Price{Input: nanos(t, "3"), CachedInput: nanos(t, "0.3"),
			CacheWrite: nanos(t, "3.75"), Output: nanos(t, "15"), Reasoning: nanos(t, "15")}},
		{Provider: "openai", Model: "gpt-4o", Price: cost.Price{Input: nanos(t, "2.5"), CachedInput: nanos(t, "1.25"),
			CacheWrite: nanos(t, "2.5"), Output: nanos(t, "12.5"), Reasoning: nanos(t, "12.5")}},
		{Provider: "openai", Model: "gpt-4o-mini*", Price: cost.PerMillion(0.15, 0.6)},
		{Provider: "pool", Model: "gpt-4.1", Price: cost.Price{Input: nanos(t, "2"), CachedInput: nanos(t, "2"), CacheWrite: nanos(t, "2"),
			Output: nanos(t, "8"), Reasoning: nanos(t, "8"), Image: nanos(t, "0.001")}},
	}
	if len(c.Prices) != len(want) {
		t.Fatalf("prices %+v", c.Prices)
	}
	for i := range want {
		if c.Prices[i] != want[i] {
			t.Errorf("line %d: %+v, want %+v", i, c.Prices[i], want[i])
		}
	}
	if _, err := cost.NewPrices(c.Currency, c.Prices); err != nil {
		t.Fatalf("the lines do not make a table: %v", err)
	}
	if cfg, err := ParseWithEnv([]byte(`{"LLM": {}}`), nil); err != nil || cfg.Cost != nil {
		t.Fatalf("not configured: %v %+v", err, cfg.Cost)
	}
	if cfg, err := ParseWithEnv([]byte(`{"LLM": {"Cost": {}}}`), nil); err != nil || cfg.Cost == nil || cfg.Cost.Currency != "USD" {
		t.Fatalf("the default currency: %v %+v", err, cfg.Cost)
	}
}

func TestCost_PriceProblemsNameTheKeyTheValueAndTheRange(t *testing.T) {
	for _, tc := range []struct {
		json, env, path, want string
	}{
		{`{"Currency": "dollars"}`, "", "LLM.Cost.Currency", "3 to 8 capital letters"},
		{`{"Prices": {"openai": {"m": {"Input": -1, "Output": 1}}}}`, "", "LLM.Cost.Prices.openai.m.Input", "between 0 and 100000 per million tokens"},
		{`{"Prices": {"openai": {"m": {"Input": 1, "Output": 100001}}}}`, "", "LLM.Cost.Prices.openai.m.Output", "between 0 and 100000"},
		{`{"Prices": {"openai": {"m": {"Input": 1, "Output": 1, "Image": 1001}}}}`, "", "LLM.Cost.Prices.openai.m.Image", "between 0 and 1000 per image"},
		{`{"Prices": {"openai": {"m": {"Input": 1}}}}`, "", "LLM.Cost.Prices.openai.m.Output", "is required"},
		{`{"Prices": {"openai": {"m": {"Input": 1, "Ouptut": 1}}}}`, "", "LLM.Cost.Prices.openai.m.Ouptut", "did you mean Output?"},
		{`{"Prices": {"openai": {"m": {"Input": "cheap", "Output": 1}}}}`, "", "LLM.Cost.Prices.openai.m.Input", "finite number"},
		{`{"Prices": {"opneai": {"m": {"Input": 1, "Output": 1}}}}`, "", "LLM.Cost.Prices.opneai", "did you mean openai?"},
		{`{"Prices": {"east": {"m": {"Input": 1, "Output": 1}}}}`, "", "LLM.Cost.Prices.east", `under "pool"`},
		{`{"Prices": {"openai": {"m": 3}}}`, "", "LLM.Cost.Prices.openai.m", "must be an object"},
		{`{"Prices": [1]}`, "", "LLM.Cost.Prices", "must be an object"},
		{`{"Prices": {"openai": {"m": {"Input": 1, "Output": 1}}, "OPENAI": {"m": {"Input": 2, "Output": 2}}}}`, "",
			"LLM.Cost.Prices.openai.m", "set twice"},
		{`{"Curency": "USD"}`, "", "LLM.Cost.Curency", "did you mean Currency?"},
		{`{}`, "LLM__Cost__Prices__openai__m__Input=NaN", "LLM.Cost.Prices.openai.m.Input", "finite number"},
		{`{}`, "LLM__Cost__Prices__openai__m__Inptu=1", "LLM.Cost.Prices.openai.m.Inptu", "LLM__Cost__Prices__openai__m__Input"},
		{`{}`, "LLM__Cost__Prices__openai=1", "LLM.Cost.Prices.openai", "<model>__Input"},
		{`{}`, "LLM__Cost__Currency__x=1", "LLM.Cost.Currency.x", "has no fields"},
	} {
		env := append([]string(nil), costKeysEnv...)
		if tc.env != "" {
			env = append(env, tc.env)
		}
		_, err := ParseWithEnv([]byte(`{"LLM": {`+costProviders+`, "Cost": `+tc.json+`}}`), env)
		var le *Error
		if !errors.As(err, &le) {
			t.Fatalf("%s %s: %v", tc.json, tc.env, err)
		}
		found := false
		for _, p := range le.Problems {
			if p.Path == tc.path && strings.Contains(p.Error(), tc.want) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s %s: want %s %q, got %v", tc.json, tc.env, tc.path, tc.want, err)
		}
	}
}

func TestCost_BudgetsFromFileAndEnv(t *testing.T) {
	doc := `{"LLM": {` + costProviders + `, "Policies": {"cheap": {"RetryCount": 0}}, "Cost": {
		"TimeZone": "Europe/Paris", "MaxKeys": 5000, "FailClosed": true,
		"Budgets": {
			"tenant-daily": {"Per": "tenant", "Window": "DAY", "Limit": 5, "Limits": {"acme": 50},
				"WarnAt": 0.8, "DowngradeAt": 0.9, "Downgrade": {"Model": "gpt-4o-mini", "Providers": ["OpenAI"], "Policy": "CHEAP"}},
			"all-monthly": {"Window": "month", "Limit": 1000, "NeverRefuse": true, "WarnAt": 0.5, "Mode": "shadow"}}}}}`
	env := append([]string{"LLM__Cost__Budgets__tenant-daily__Limits__beta=7.25", "LLM__Cost__Budgets__TENANT-DAILY__RefuseAt=1.5",
		"LLM__Cost__Budgets__tenant-daily__Downgrade__Providers__1=claude"}, costKeysEnv...)
	cfg, err := ParseWithEnv([]byte(doc), env)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Cost
	if c.TimeZone != "Europe/Paris" || c.Location.String() != "Europe/Paris" || c.MaxKeys != 5000 || !c.FailClosed || len(c.Budgets) != 2 {
		t.Fatalf("%+v", c)
	}
	all, td := c.Budgets[0], c.Budgets[1]
	if all.Name != "all-monthly" || all.Window != cost.Month || all.Limit != nanos(t, "1000") || !all.NeverRefuse || !all.Shadow || all.Per != "" {
		t.Errorf("all-monthly %+v", all)
	}
	if td.Name != "tenant-daily" || td.Per != "tenant" || td.Window != cost.Day || td.Limit != nanos(t, "5") ||
		td.Limits["acme"] != nanos(t, "50") || td.Limits["beta"] != nanos(t, "7.25") || td.WarnAt != 0.8 || td.DowngradeAt != 0.9 ||
		td.RefuseAt != 1.5 || td.Shadow || td.Downgrade.Model != "gpt-4o-mini" || td.Downgrade.Policy != "cheap" ||
		strings.Join(td.Downgrade.Providers, ",") != "openai,claude" {
		t.Errorf("tenant-daily %+v", td)
	}
	if _, err := cost.NewLedger(cost.LedgerOptions{Location: c.Location, MaxKeys: c.MaxKeys}, c.Budgets...); err != nil {
		t.Fatalf("the budgets make no ledger: %v", err)
	}
}

func TestCost_BudgetProblemsNameTheKeyTheValueAndTheRange(t *testing.T) {
	const base = `"Window": "day", "Limit": 1`
	for _, tc := range []struct {
		json, env, path, want string
	}{
		{`{"b": {"Limit": 1}}`, "", "LLM.Cost.Budgets.b.Window", "is required"},
		{`{"b": {"Window": "dya", "Limit": 1}}`, "", "LLM.Cost.Budgets.b.Window", "did you mean day?"},
		{`{"b": {"Window": "day"}}`, "", "LLM.Cost.Budgets.b.Limit", "is required"},
		{`{"b": {"Window": "day", "Limit": -2}}`, "", "LLM.Cost.Budgets.b.Limit", "must be above 0 and at most 1000000000"},
		{`{"b": {"Window": "day", "Limit": 1e10}}`, "", "LLM.Cost.Budgets.b.Limit", "at most 1000000000"},
		{`{"b": {` + base + `, "Limits": {"k": 0}}}`, "", "LLM.Cost.Budgets.b.Limits.k", "must be above 0"},
		{`{"b": {` + base + `, "WarnAt": 11}}`, "", "LLM.Cost.Budgets.b.WarnAt", "between 0 and 10"},
		{`{"b": {` + base + `, "WarnAt": 2}}`, "", "LLM.Cost.Budgets.b", "must not be above RefuseAt"},
		{`{"b": {` + base + `, "DowngradeAt": 0.5}}`, "", "LLM.Cost.Budgets.b", "is required with DowngradeAt"},
		{`{"b": {` + base + `, "DowngradeAt": 0.5, "Downgrade": {"Policy": "chaep"}}}`, "", "LLM.Cost.Budgets.b.Downgrade.Policy", "must name a policy"},
		{`{"b": {` + base + `, "DowngradeAt": 0.5, "Downgrade": {"Providers": ["east"]}}}`, "", "LLM.Cost.Budgets.b.Downgrade.Providers[0]",
			"must name a provider"},
		{`{"b": {` + base + `, "DowngradeAt": 0.5, "Downgrade": {"Modle": "m"}}}`, "", "LLM.Cost.Budgets.b.Downgrade.Modle", "did you mean Model?"},
		{`{"b": {` + base + `, "Mode": "dry-run"}}`, "", "LLM.Cost.Budgets.b.Mode", `must be one of "enforce", "shadow"`},
		{`{"b": {` + base + `, "Per": "the tenant"}}`, "", "LLM.Cost.Budgets.b.Per", "letters, digits"},
		{`{"b c": {` + base + `}}`, "", `LLM.Cost.Budgets["b c"]`, "letters, digits"},
		{`{"b": {` + base + `, "Limt": 1}}`, "", "LLM.Cost.Budgets.b.Limt", "did you mean Limit?"},
		{`{"b": {` + base + `}}`, "LLM__Cost__TimeZone=Mars/Olympus", "LLM.Cost.TimeZone", "IANA time zone"},
		{`{"b": {` + base + `}}`, "LLM__Cost__MaxKeys=-1", "LLM.Cost.MaxKeys", "between 0"},
		{`{"b": {` + base + `}}`, "LLM__Cost__Budgets__b__Limit=NaN", "LLM.Cost.Budgets.b.Limit", "finite number"},
		{`{"b": {` + base + `}}`, "LLM__Cost__Budgets__b__Windw=day", "LLM.Cost.Budgets.b.Windw", "LLM__Cost__Budgets__b__Window"},
		{`{"b": {` + base + `}}`, "LLM__Cost__Budgets__b=1", "LLM.Cost.Budgets.b", "names an object"},
	} {
		env := append([]string(nil), costKeysEnv...)
		if tc.env != "" {
			env = append(env, tc.env)
		}
		_, err := ParseWithEnv([]byte(`{"LLM": {`+costProviders+`, "Cost": {"Budgets": `+tc.json+`}}}`), env)
		var le *Error
		if !errors.As(err, &le) {
			t.Fatalf("%s %s: %v", tc.json, tc.env, err)
		}
		found := false
		for _, p := range le.Problems {
			if p.Path == tc.path && strings.Contains(p.Error(), tc.want) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s %s: want %s %q, got %v", tc.json, tc.env, tc.path, tc.want, err)
		}
	}
}
