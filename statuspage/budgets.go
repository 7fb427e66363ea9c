package statuspage

import (
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/steadyllm/steady/health"
	"github.com/steadyllm/steady/internal/redact"
)

// Budget is one of the client's cost budgets (client.WithBudgets) in its current window, as
// the readiness check reads it (health.BudgetResult): what its keys spent against their
// limits, at which tier.
type Budget struct {
	// Name is the budget's name; Status its status for readiness: pass, or warn once a key
	// passed the warn tier or had a call refused (a budget in shadow mode always passes), or
	// when it has no room for new keys — never fail.
	Name   string        `json:"name"`
	Status health.Status `json:"status"`
	// Tier is the highest tier a key's next call meets: allow, warn, downgrade or refuse.
	Tier string `json:"tier"`
	// Shadow marks a budget in shadow mode: its tiers are what it would do; it applies none.
	Shadow bool `json:"shadow,omitempty"`
	// Per is the dimension of its keys ("tenant"), "" when it keeps one spend for every call.
	Per string `json:"per,omitempty"`
	// Window is its window (minute, hour, day, month); WindowEnd when the current one ends and
	// every key starts again from 0 (on the client's clock), EndsInMs the milliseconds until
	// then.
	Window    string    `json:"window"`
	WindowEnd time.Time `json:"windowEnd"`
	EndsInMs  int64     `json:"endsInMs"`
	// Currency is the currency of the amounts; WarnAt, DowngradeAt and RefuseAt the tiers as
	// fractions of a key's limit, 0 for none.
	Currency    string  `json:"currency"`
	WarnAt      float64 `json:"warnAt,omitempty"`
	DowngradeAt float64 `json:"downgradeAt,omitempty"`
	RefuseAt    float64 `json:"refuseAt,omitempty"`
	// Keys are the keys that spent the largest share of their limit (health.BudgetKeys of
	// them at most), the largest first; MoreKeys how many others spent in the window.
	Keys     []BudgetKey `json:"keys"`
	MoreKeys int         `json:"moreKeys"`
	// AtWarn, AtDowngrade and AtRefuse count the keys at each tier, Refused those that had a
	// call refused in the window, of every key it counts.
	AtWarn      int `json:"atWarn"`
	AtDowngrade int `json:"atDowngrade"`
	AtRefuse    int `json:"atRefuse"`
	Refused     int `json:"refused"`
	// KeysFull reports that it had no room for a new key in this window: the new key's calls
	// go uncounted, or are refused when the budgets fail closed.
	KeysFull bool `json:"keysFull,omitempty"`
	// Fleet reports that a spend store shares it with the application's other instances.
	Fleet bool `json:"fleet,omitempty"`
}

// BudgetKey is one key's spend in its budget's window.
type BudgetKey struct {
	// Key is the key (a tenant, a team: the application's own), escaped and bounded as every
	// text the page shows; "" for the calls that named none.
	Key string `json:"key"`
	// Spent and Limit are amounts in the budget's currency ("0.25"), Share is Spent / Limit
	// (to a thousandth).
	Spent string  `json:"spent"`
	Limit string  `json:"limit"`
	Share float64 `json:"share"`
	// Tier is what the key's next call meets: allow, warn, downgrade or refuse.
	Tier string `json:"tier"`
	// Refused reports that a call of the key was refused in the window.
	Refused bool `json:"refused,omitempty"`
}

// SpendStore is the state of the store the budgets are shared through.
type SpendStore struct {
	// Up is false once the last request to the store failed, until one succeeds.
	Up bool `json:"up"`
	// FailClosed reports that calls the budgets cannot count are then refused, rather than
	// let through counted by this instance alone.
	FailClosed bool `json:"failClosed,omitempty"`
}

// budgets converts the budgets of the readiness report rep into the page's terms.
func (p *Page) budgets(rep health.Report) ([]Budget, *SpendStore) {
	var out []Budget
	var store *SpendStore
	for _, b := range rep.Budgets {
		r := b.Reading
		bv := Budget{Name: p.scrub.Text(r.Name, maxName), Status: b.Status, Tier: p.scrub.Text(b.Tier, maxName), Shadow: r.Shadow,
			Per: p.scrub.Text(r.Per, maxName), Window: p.scrub.Text(r.Window, maxName), WindowEnd: r.WindowEnd,
			EndsInMs: max(r.EndsIn.Milliseconds(), 0), Currency: p.scrub.Text(r.Currency, maxName),
			WarnAt: r.WarnAt, DowngradeAt: r.DowngradeAt, RefuseAt: r.RefuseAt, Keys: make([]BudgetKey, 0, len(r.Keys)),
			MoreKeys: max(r.Counted-len(r.Keys), 0), AtWarn: r.AtWarn, AtDowngrade: r.AtDowngrade, AtRefuse: r.AtRefuse,
			Refused: r.Refused, KeysFull: r.Full, Fleet: r.Fleet}
		for _, k := range r.Keys {
			bv.Keys = append(bv.Keys, BudgetKey{Key: redact.Safe(p.scrub.Redact(k.Key), maxName), Spent: p.scrub.Text(k.Spent, maxName),
				Limit: p.scrub.Text(k.Limit, maxName), Share: round3(k.Share), Tier: p.scrub.Text(k.Tier, maxName), Refused: k.Refused})
		}
		out = append(out, bv)
		if r.Fleet {
			if store == nil {
				store = &SpendStore{Up: true}
			}
			store.Up = store.Up && !r.StoreDown
			store.FailClosed = r.FailClosed
		}
	}
	return out, store
}

// budgetsView is the budgets as the template shows them.
type budgetsView struct {
	Store *SpendStore
	List  []budgetView
}

type budgetView struct {
	Name, Status, Summary string
	Shadow                bool
	EndAt                 int64  // the window's end, in milliseconds since the epoch, for the script
	Ends                  string // the time until then, to the unit the page shows it in
	EndsAt                string // the moment itself, in UTC
	Keys                  []budgetKeyView
	More                  string
}

type budgetKeyView struct {
	Key, Name, Tier, TierText, Class string
	Bar                              template.HTML
	Percent, Amount                  string
	Refused                          bool
}

// viewBudgets prepares the budgets of s for the template.
func viewBudgets(s Snapshot) budgetsView {
	v := budgetsView{Store: s.SpendStore}
	at := s.Time.UnixMilli()
	for _, b := range s.Budgets {
		bv := budgetView{Name: b.Name, Status: string(b.Status), Shadow: b.Shadow, EndAt: deadline(at, b.EndsInMs),
			Ends: settled(b.EndsInMs), EndsAt: b.WindowEnd.UTC().Format("Jan 2 15:04 UTC")}
		parts := []string{b.Window}
		if b.Per != "" {
			parts = append(parts, "per "+b.Per)
		}
		counted := len(b.Keys) + b.MoreKeys
		parts = append(parts, plural(counted, "key"))
		for _, t := range []struct {
			n    int
			what string
		}{{b.AtWarn, "at warn"}, {b.AtDowngrade, "at downgrade"}, {b.AtRefuse, "at refuse"}, {b.Refused, "refused a call"}} {
			if t.n > 0 {
				parts = append(parts, strconv.Itoa(t.n)+" "+t.what)
			}
		}
		if b.KeysFull {
			parts = append(parts, "no room for new keys")
		}
		bv.Summary = strings.Join(parts, " · ")
		for _, k := range b.Keys {
			kv := budgetKeyView{Key: k.Key, Name: k.Key, Tier: k.Tier, TierText: k.Tier, Class: tierClass(k.Tier),
				Bar: bar(k.Share, b.WarnAt, b.DowngradeAt, b.RefuseAt, k.Tier), Percent: percent(k.Share),
				Amount: k.Spent + " of " + k.Limit + " " + b.Currency, Refused: k.Refused}
			switch {
			case k.Key == "" && b.Per == "":
				kv.Name = "(every call)"
			case k.Key == "":
				kv.Name = "(no " + b.Per + " named)"
			}
			if b.Shadow && k.Tier != "allow" {
				kv.TierText = "would " + k.Tier
			}
			switch {
			case k.Refused && b.Shadow:
				kv.TierText += " · would have refused a call"
			case k.Refused:
				kv.TierText += " · refused a call"
			}
			bv.Keys = append(bv.Keys, kv)
		}
		if b.MoreKeys > 0 {
			bv.More = "and " + plural(b.MoreKeys, "more key") + " that spent less of their limit"
		}
		v.List = append(v.List, bv)
	}
	return v
}

// plural is n and what, with an s unless n is 1.
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// percent renders a share as a whole percentage ("85%").
func percent(share float64) string { return strconv.FormatFloat(100*share, 'f', 0, 64) + "%" }

// tierClass is the colour of a tier: the page's pass, warn and fail.
func tierClass(tier string) string {
	switch tier {
	case "allow":
		return "pass"
	case "warn", "downgrade":
		return "warn"
	}
	return "fail"
}

// settled renders the time left as countdown does, cut to the unit it is shown in (tens of
// seconds under a minute): the page's script counts it down to the second, and the text the
// server renders changes only when that unit does, so that an open page is not sent a new
// state at every refresh for a window that ends in a month.
func settled(ms int64) string {
	var unit int64
	switch {
	case ms < 60_000:
		unit = 10_000
	case ms < 3_600_000:
		unit = 60_000
	case ms < 48*3_600_000:
		unit = 360_000
	default:
		unit = 8_640_000
	}
	return countdown(ms / unit * unit)
}

// The budget bar's size, in pixels.
const barW, barH = 120, 10

// bar draws a share of a limit as an inline SVG bar in the colour of its tier, with a tick at
// each tier; its scale reaches the highest tier, or the limit. It holds numbers and fixed
// words only, so it needs no escaping.
func bar(share, warn, downgrade, refuse float64, tier string) template.HTML {
	scale := max(1, warn, downgrade, refuse)
	fill := min(max(share/scale, 0), 1) * barW
	var b strings.Builder
	b.WriteString(`<svg class="bar `)
	b.WriteString(tierClass(tier))
	b.WriteString(`" width="120" height="10" viewBox="0 0 120 10" role="img" aria-label="`)
	b.WriteString(percent(share))
	b.WriteString(` of the limit spent`)
	for _, t := range []struct {
		name string
		at   float64
	}{{"warn", warn}, {"downgrade", downgrade}, {"refuse", refuse}} {
		if t.at > 0 {
			b.WriteString("; " + t.name + " at ")
			b.WriteString(percent(t.at))
		}
	}
	b.WriteString(`"><rect class="track" width="120" height="10"/><rect class="fill" width="`)
	b.WriteString(strconv.FormatFloat(fill, 'f', 1, 64))
	b.WriteString(`" height="10"/>`)
	for _, at := range []float64{warn, downgrade, refuse} {
		if at > 0 {
			x := strconv.FormatFloat(min(at/scale, 1)*(barW-1)+0.5, 'f', 1, 64)
			b.WriteString(`<line x1="` + x + `" x2="` + x + `" y1="0" y2="10"/>`)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // #nosec: numbers and fixed text only
}

// budgetsTemplate renders the budgets section of the page, between the providers and the
// events; html/template escapes every text, the bars alone are markup, made of numbers.
var budgetsTemplate = template.Must(stateTemplate.New("budgets").Parse(`{{with .List}}<h2 id="budgets">Budgets <small>` +
	`{{with $.Store}}spend store: {{if .Up}}<b class="pass">up</b>{{else}}<b class="warn">down</b>{{end}}` +
	` · {{if .FailClosed}}fail closed{{else}}fail open{{end}}{{else}}this instance's own{{end}}</small></h2>
{{range .}}<h3 data-budget="{{.Name}}" data-status="{{.Status}}"><span class="badge {{.Status}}">{{.Status}}</span> {{.Name}}` +
	`{{if .Shadow}} <span class="badge shadow">shadow</span>{{end}} <small>{{.Summary}} · ends in ` +
	`<span data-until="{{.EndAt}}" title="{{.EndsAt}}">{{.Ends}}</span></small></h3>
{{if .Keys}}<table class="budget" data-budget="{{.Name}}"><thead><tr><th>key</th><th>spent of limit</th><th>amount</th>` +
	`<th>tier</th></tr></thead><tbody>
{{range .Keys}}<tr data-key="{{.Key}}" data-tier="{{.Tier}}" data-refused="{{if .Refused}}yes{{else}}no{{end}}"><td>{{.Name}}</td>` +
	`<td>{{.Bar}} {{.Percent}}</td><td>{{.Amount}}</td><td class="{{.Class}}">{{.TierText}}</td></tr>
{{end}}{{with .More}}<tr class="more"><td colspan="4" class="mute">{{.}}</td></tr>
{{end}}</tbody></table>
{{else}}<p class="mute">No key has spent anything in this window yet.</p>
{{end}}{{end}}{{end}}`))
