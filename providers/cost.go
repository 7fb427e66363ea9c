package providers

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// Money is an amount of money in nano-units of a currency: 1 is 10⁻⁹ of a dollar (or of a
// euro…), so 1_000_000_000 is one unit. Integer nano-units keep sums exact — adding the cost of
// a million calls loses nothing, as float64 dollars would — and hold up to about ±9.2 billion
// units. The currency is the price table's (see package cost); Money itself does not say it.
type Money int64

// The scale of Money and its bounds.
const (
	// Unit is one unit of the currency (one dollar, one euro) in Money.
	Unit Money = 1_000_000_000
	// MaxMoney is the largest amount Money holds; arithmetic in package cost saturates at it
	// rather than wrap.
	MaxMoney Money = math.MaxInt64
)

// String renders m in units with up to nine decimals and no trailing zeros: "0.0025", "12",
// "-1.5".
func (m Money) String() string {
	neg := m < 0
	u := uint64(m)
	if neg {
		u = uint64(-(m + 1)) + 1 // the magnitude, also of math.MinInt64
	}
	whole, frac := u/uint64(Unit), u%uint64(Unit)
	s := strconv.FormatUint(whole, 10)
	if frac != 0 {
		f := strconv.FormatUint(frac, 10)
		f = strings.Repeat("0", 9-len(f)) + f
		s += "." + strings.TrimRight(f, "0")
	}
	if neg {
		s = "-" + s
	}
	return s
}

// Add returns m + n, saturating at MaxMoney and at -MaxMoney instead of wrapping around.
func (m Money) Add(n Money) Money {
	s := m + n
	switch {
	case m > 0 && n > 0 && s < 0:
		return MaxMoney
	case m < 0 && n < 0 && s >= 0:
		return -MaxMoney
	}
	return s
}

// Units returns m in units as a float64, for metrics and display. It is exact up to about
// 9 million units; sums should be kept in Money.
func (m Money) Units() float64 { return float64(m) / float64(Unit) }

// errMoney is the cause of every ParseMoney failure.
var errMoney = errors.New("not a decimal amount of at most nine decimals within ±9 223 372 036 units")

// ParseMoney reads a decimal amount of units ("2.5", "0.000075", "-3") exactly: no binary
// floating point is involved, so "0.1" is 100 000 000 nano-units, not one less. More than nine
// decimals, an exponent, a number out of range or anything but digits, one dot and a leading
// sign is an error.
func ParseMoney(s string) (Money, error) {
	t := s
	neg := false
	switch {
	case strings.HasPrefix(t, "-"):
		neg, t = true, t[1:]
	case strings.HasPrefix(t, "+"):
		t = t[1:]
	}
	whole, frac, _ := strings.Cut(t, ".")
	if (whole == "" && frac == "") || len(frac) > 9 || !digits(whole) || !digits(frac) || len(whole) > 10 {
		return 0, errMoney
	}
	var w uint64
	if whole != "" {
		w, _ = strconv.ParseUint(whole, 10, 64) // at most ten digits: it fits
	}
	var f uint64
	if frac != "" {
		f, _ = strconv.ParseUint(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
	}
	if w > uint64(MaxMoney/Unit) || w == uint64(MaxMoney/Unit) && f > uint64(MaxMoney%Unit) {
		return 0, errMoney
	}
	m := Money(w)*Unit + Money(f)
	if neg {
		m = -m
	}
	return m, nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// MoneyOf converts units written as a float64 (a price read from JSON: 2.5, 0.075) to Money
// by way of its shortest decimal form, so the amount is the decimal the user wrote, not the
// binary fraction nearest to it: MoneyOf(0.1) is exactly 100 000 000. Digits past the ninth
// decimal are rounded half away from zero. ok is false for NaN, ±Inf and amounts beyond
// ±9 billion units.
func MoneyOf(units float64) (m Money, ok bool) {
	if math.IsNaN(units) || math.IsInf(units, 0) || math.Abs(units) >= 9e9 {
		return 0, false
	}
	s := strconv.FormatFloat(units, 'f', -1, 64)
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) <= 9 {
		m, err := ParseMoney(s)
		return m, err == nil
	}
	// Round at the ninth decimal, half away from zero, on the decimal text.
	up := frac[9] >= '5'
	m, err := ParseMoney(whole + "." + frac[:9])
	if err != nil {
		return 0, false
	}
	if up {
		if units < 0 {
			m--
		} else {
			m++
		}
	}
	return m, true
}

// CallCost is what one call cost, as the client knows it (see package cost for the prices and
// the rules). Every amount is in the currency of the client's price table (Currency); amounts
// are never negative.
//
// Known amounts come from the usage a server reported; estimated ones from steady's own token
// estimate, for attempts whose usage nobody reported but which a server may bill — an
// attempt abandoned after the server had read the prompt. The total is what a budget is
// charged.
type CallCost struct {
	// Currency is the price table's currency code ("USD"); "" when the client has no prices,
	// and then every amount is 0.
	Currency string
	// Serving is the cost of the attempt that served the answer, from its usage (cached
	// input, cache writes and reasoning tokens at their own prices). For a stream the caller
	// closed before its end, the serving attempt's usage is unknown: its cost is in Estimated.
	Serving Money
	// Abandoned is the cost of the attempts the call abandoned whose usage the servers
	// reported: a stream that failed after its usage (or part of it) was sent. Known, as
	// Serving is.
	Abandoned Money
	// Estimated is the cost of attempts the servers may bill but did not report the usage of,
	// estimated: a stream cut or closed before its usage came (the prompt's estimate and the
	// text delivered), an answer whose server reported no usage, and output delivered beyond
	// what a cut stream's last count said. An attempt cut before any content came and without
	// usage — a hedge or a first try cancelled because another try won, a first-token
	// timeout — is charged nothing, in none of the amounts: a server may bill it, but nobody
	// can say what.
	Estimated Money
	// Unpriced counts the attempts with a cost to tell whose provider and model have no price:
	// their cost is in none of the amounts. The client reports each such model once.
	Unpriced int
}

// Total returns Serving + Abandoned + Estimated: what the call is charged.
func (c CallCost) Total() Money { return c.Serving.Add(c.Abandoned).Add(c.Estimated) }

// Add returns c with the amounts of d added, and d's Currency when d has one: the cost of a
// call made of two parts (a d without a Currency prices nothing and changes nothing).
func (c CallCost) Add(d CallCost) CallCost {
	if d.Currency == "" {
		return c
	}
	c.Currency = d.Currency
	c.Serving, c.Abandoned, c.Estimated = c.Serving.Add(d.Serving), c.Abandoned.Add(d.Abandoned), c.Estimated.Add(d.Estimated)
	c.Unpriced += d.Unpriced
	return c
}

// Known returns Serving + Abandoned: the part of the cost that comes from reported usage.
func (c CallCost) Known() Money { return c.Serving.Add(c.Abandoned) }
