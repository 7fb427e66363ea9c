package cost_test

import (
	"math"
	"strings"
	"testing"

	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/providers"
)

func money(t *testing.T, s string) providers.Money {
	t.Helper()
	m, err := providers.ParseMoney(s)
	if err != nil {
		t.Fatalf("ParseMoney(%q): %v", s, err)
	}
	return m
}

func TestMoney_ParsesAndPrintsDecimalsExactly(t *testing.T) {
	for _, tc := range []struct {
		in   string
		nano int64
		out  string
	}{
		{"0.1", 100_000_000, "0.1"}, {"2.5", 2_500_000_000, "2.5"}, {"0.000000001", 1, "0.000000001"},
		{"-3", -3_000_000_000, "-3"}, {"+0.075", 75_000_000, "0.075"}, {"12.", 12_000_000_000, "12"},
		{".5", 500_000_000, "0.5"}, {"0", 0, "0"}, {"9223372036.854775807", math.MaxInt64, "9223372036.854775807"},
	} {
		m, err := providers.ParseMoney(tc.in)
		if err != nil || int64(m) != tc.nano || m.String() != tc.out {
			t.Errorf("ParseMoney(%q) = %d (%s), %v; want %d (%s)", tc.in, m, m, err, tc.nano, tc.out)
		}
	}
	for _, bad := range []string{"", ".", "1e3", "0.0000000001", "1,5", "NaN", "Inf", "9223372036.854775808",
		"99999999999", "--1", "1.2.3", " 1"} {
		if _, err := providers.ParseMoney(bad); err == nil {
			t.Errorf("ParseMoney(%q) accepted", bad)
		}
	}
	if s := providers.Money(math.MinInt64).String(); s != "-9223372036.854775808" {
		t.Errorf("MinInt64 prints %q", s)
	}
}

func TestMoneyOf_TakesTheDecimalWrittenNotTheNearestBinaryFraction(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		nano int64
	}{
		{0.1, 100_000_000}, {0.15, 150_000_000}, {2.5, 2_500_000_000}, {0.075, 75_000_000}, {1.1, 1_100_000_000},
		{0.0000000015, 2}, {0.0000000014, 1}, {-0.0000000015, -2}, {3e-10, 0},
	} {
		m, ok := providers.MoneyOf(tc.in)
		if !ok || int64(m) != tc.nano {
			t.Errorf("MoneyOf(%v) = %d, %v; want %d", tc.in, m, ok, tc.nano)
		}
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e10, -1e10} {
		if _, ok := providers.MoneyOf(bad); ok {
			t.Errorf("MoneyOf(%v) accepted", bad)
		}
	}
}

func TestPrice_OfChargesEachKindOfTokenAtItsPriceRoundingOnce(t *testing.T) {
	p := cost.Price{Input: money(t, "3"), CachedInput: money(t, "0.3"), CacheWrite: money(t, "3.75"),
		Output: money(t, "15"), Reasoning: money(t, "20"), Image: money(t, "0.01")}
	u := providers.Usage{InputTokens: 1000, CachedInputTokens: 200, CacheWriteInputTokens: 300, OutputTokens: 400, ReasoningTokens: 100}
	// 500 × 3 + 200 × 0.3 + 300 × 3.75 + 300 × 15 + 100 × 20 = 1500 + 60 + 1125 + 4500 + 2000 = 9185 per million
	// → 0.009185, plus two images at 0.01.
	if got, want := p.Of(u, 2), money(t, "0.029185"); got != want {
		t.Fatalf("Of = %s, want %s", got, want)
	}
	// One token at 0.0000015 per million is 1.5e-12: far below a nano-unit, summed before rounding.
	tiny := cost.Price{Input: 1, Output: 1}
	if got := tiny.Of(providers.Usage{InputTokens: 400_000, OutputTokens: 100_000}, 0); got != 1 {
		t.Fatalf("500 000 tokens at a nano-unit per million = %d, want 1 (0.5 rounds up)", got)
	}
	if got := tiny.Of(providers.Usage{InputTokens: 499_999}, 0); got != 0 {
		t.Fatalf("499 999 tokens at a nano-unit per million = %d, want 0", got)
	}
}

func TestPrice_OfBelievesNoCountBeyondItsBounds(t *testing.T) {
	p := cost.Price{Input: cost.MaxTokenPrice, CachedInput: cost.MaxTokenPrice, CacheWrite: cost.MaxTokenPrice,
		Output: cost.MaxTokenPrice, Reasoning: cost.MaxTokenPrice, Image: cost.MaxImagePrice}
	huge := providers.Usage{InputTokens: math.MaxInt, OutputTokens: math.MaxInt, CachedInputTokens: math.MaxInt,
		CacheWriteInputTokens: math.MaxInt, ReasoningTokens: math.MaxInt}
	got := p.Of(huge, math.MaxInt)
	// At most MaxUsageTokens input and output, each at the dearest price, plus MaxImages images.
	want := 2*providers.Money(cost.MaxUsageTokens/1_000_000)*cost.MaxTokenPrice + cost.MaxImages*cost.MaxImagePrice
	if got != want || got <= 0 {
		t.Fatalf("Of(huge) = %d, want %d", got, want)
	}
	neg := providers.Usage{InputTokens: -5, OutputTokens: -5, CachedInputTokens: -1, ReasoningTokens: -1}
	if got := p.Of(neg, -3); got != 0 {
		t.Fatalf("negative counts cost %d", got)
	}
	// Cached more than the whole prompt: the cached tokens are the prompt, not more.
	q := cost.Price{Input: money(t, "10"), CachedInput: money(t, "1")}
	if got := q.Of(providers.Usage{InputTokens: 100, CachedInputTokens: 1000}, 0); got != money(t, "0.0001") {
		t.Fatalf("cached beyond the prompt: %s", got)
	}
}

func TestPerMillion_FillsCacheAndReasoningFromInputAndOutput(t *testing.T) {
	p := cost.PerMillion(2.5, 10)
	if p.Input != money(t, "2.5") || p.CachedInput != p.Input || p.CacheWrite != p.Input || p.Output != money(t, "10") ||
		p.Reasoning != p.Output || p.Image != 0 {
		t.Fatalf("%+v", p)
	}
	if p := cost.PerMillion(math.NaN(), -1); p != (cost.Price{}) {
		t.Fatalf("NaN and negative: %+v", p)
	}
}

func TestNewPrices_RefusesEveryBadLineAtOnceNamingIt(t *testing.T) {
	_, err := cost.NewPrices("usd", []cost.Entry{
		{Provider: "openai", Model: "gpt-4o", Price: cost.Price{Input: -1}},
		{Provider: "", Model: "x"},
		{Provider: "openai", Model: "a\nb"},
		{Provider: "openai", Model: "ok", Price: cost.Price{Output: cost.MaxTokenPrice + 1}},
		{Provider: "openai", Model: "img", Price: cost.Price{Image: cost.MaxImagePrice + 1}},
		{Provider: "openai", Model: "dup"}, {Provider: "openai", Model: "dup"},
		{Provider: "openai", Model: strings.Repeat("m", cost.MaxNameBytes+1)},
	})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{`currency "usd"`, `"openai/gpt-4o": Input -0.000000001: must be between 0 and 100000 per million tokens`,
		`provider is empty`, `control character`, `Output 100000.000000001`, `Image 1000.000000001: must be between 0 and 1000 per image`,
		`"openai/dup": given twice`, `is 257 bytes long`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := cost.NewPrices("USD", make([]cost.Entry, cost.MaxEntries+1)); err == nil || !strings.Contains(err.Error(), "at most 10000") {
		t.Fatalf("too many lines: %v", err)
	}
}

func TestPrices_LookupPrefersExactThenTheLongestPrefix(t *testing.T) {
	p := func(in float64) cost.Price { return cost.PerMillion(in, in) }
	tab, err := cost.NewPrices("USD", []cost.Entry{
		{Provider: "openai", Model: "gpt-4o", Price: p(1)},
		{Provider: "openai", Model: "gpt-4o*", Price: p(2)},
		{Provider: "openai", Model: "gpt-4o-mini*", Price: p(3)},
		{Provider: "*", Model: "gpt-4o-mini-special", Price: p(4)},
		{Provider: "*", Model: "gpt-4o-mini-*", Price: p(5)},
		{Provider: "azure", Model: "*", Price: p(6)},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		provider, model string
		want            float64
		ok              bool
	}{
		{"openai", "gpt-4o", 1, true},
		{"openai", "gpt-4o-2024-08-06", 2, true},
		{"openai", "gpt-4o-mini", 3, true},
		{"openai", "gpt-4o-mini-2024-07-18", 5, true}, // "gpt-4o-mini-" (any provider) is longer than openai's "gpt-4o-mini"
		{"openai", "gpt-4o-mini-special", 4, true},    // an exact line for any provider beats a prefix
		{"other", "gpt-4o-mini-x", 5, true},
		{"other", "gpt-4o", 0, false},
		{"azure", "anything", 6, true},
		{"openai", "", 0, false},
	} {
		got, ok := tab.Lookup(tc.provider, tc.model)
		if ok != tc.ok || (ok && got != p(tc.want)) {
			t.Errorf("Lookup(%q, %q) = %v, %v", tc.provider, tc.model, got.Input, ok)
		}
	}
	var none *cost.Prices
	if _, ok := none.Lookup("openai", "gpt-4o"); ok {
		t.Fatal("a nil table priced something")
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = tab.Lookup("openai", "gpt-4o-mini-2024-07-18") }); n != 0 {
		t.Fatalf("Lookup allocates %v", n)
	}
	if e := tab.Entries(); len(e) != 6 || e[0].Model != "gpt-4o-mini-special" || e[len(e)-1].Model != "gpt-4o-mini*" {
		t.Fatalf("entries %+v", e)
	}
}

func FuzzParseMoney(f *testing.F) {
	for _, s := range []string{"0.1", "-3", "9223372036.854775807", "1e3", ".", "+.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := providers.ParseMoney(s)
		if err != nil {
			return
		}
		back, err := providers.ParseMoney(m.String())
		if err != nil || back != m {
			t.Fatalf("%q → %d → %q → %d, %v", s, m, m.String(), back, err)
		}
	})
}
