package statuspage

import (
	"bytes"
	"crypto/sha256"
	_ "embed" // the page's style and script
	"encoding/base64"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"
)

// The page's only style and script, inlined into it: nothing is loaded from anywhere, so the
// page works offline and behind any proxy.
var (
	//go:embed page.css
	pageCSS string
	//go:embed page.js
	pageJS string
)

// contentSecurityPolicy allows the page exactly its own inline style and script, by their
// SHA-256 hashes, and connections to its own origin (the stream): no other script, style,
// image, frame, form or base URL. A script injected into the page through any text it shows
// would not run.
var contentSecurityPolicy = "default-src 'none'; script-src '" + hash(pageJS) + "'; style-src '" + hash(pageCSS) +
	"'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// hash is the CSP source expression of an inline element's text.
func hash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// frame is the state rendered once, shared by the streams open at the same moment.
type frame struct {
	at   time.Time // when the state was read, on the wall clock
	html []byte    // the state as the inside of the page's <main>
}

// frame returns the state rendered now, or at most maxAge ago when another viewer asked for
// it already: the streams open at once share the work of reading and rendering.
func (p *Page) frame(maxAge time.Duration) frame {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if age := now.Sub(p.cache.at); p.cache.html != nil && age >= 0 && age < maxAge {
		return p.cache
	}
	s := p.Snapshot()
	var b bytes.Buffer
	if err := stateTemplate.Execute(&b, view(s)); err != nil {
		// Cannot happen: the template is fixed and its data made here. Say so rather than
		// show half a page.
		b.Reset()
		b.WriteString(`<p class="fail">statuspage: cannot render the state</p>`)
	}
	p.cache = frame{at: s.Time, html: b.Bytes()}
	return p.cache
}

// renderPage is the whole page around the state f.
func renderPage(f frame) []byte {
	var b bytes.Buffer
	b.Grow(len(pageCSS) + len(pageJS) + len(f.html) + 1024)
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8">` +
		`<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="referrer" content="no-referrer">` +
		`<title>steady status</title><style>`)
	b.WriteString(pageCSS)
	b.WriteString(`</style><noscript><meta http-equiv="refresh" content="5"></noscript></head><body>` +
		`<header><h1>steady status</h1><span id="live" class="mute">read at `)
	b.WriteString(f.at.UTC().Format("15:04:05 UTC"))
	b.WriteString(`</span></header><main id="state">`)
	b.Write(f.html)
	b.WriteString(`</main><script>`)
	b.WriteString(pageJS)
	b.WriteString(`</script></body></html>`)
	return b.Bytes()
}

// pageView is a snapshot as the template shows it: every text formatted, every deadline a
// moment on the wall clock (milliseconds since the epoch) that the page's script counts down.
type pageView struct {
	Status     string
	Chain      []string
	Shared     *SharedState
	Providers  []providerView
	Events     []eventView
	Kept, Seen int
	Budgets    budgetsView
}

type providerView struct {
	Name, Status, Summary string
	Rows                  []rowView
}

type rowView struct {
	Route                 bool
	Key, Name, Status     string
	State                 string // the circuit's state, as the snapshot has it: data-circuit
	Circuit, CircuitClass string // what the circuit cell shows, and its colour
	Failing               string // why its calls keep failing for its configuration
	Probe                 string
	ProbeAt               int64 // 0: no countdown
	Pause                 string
	PauseAt               int64
	Requests, Tokens      string
	Latency, Errors       string
	Stall                 string // when a stream is cut for its silence
	Spark                 template.HTML
	InFlight              string
	Hedges, Failovers     string
	Estimate              string // how a route estimates its prompts' tokens
}

type eventView struct {
	Time, Where, Type, Detail string
}

// view prepares s for the template.
func view(s Snapshot) pageView {
	v := pageView{Status: string(s.Status), Chain: s.Chain, Shared: s.SharedState, Kept: len(s.Events),
		Seen: int(min(s.EventsSeen, math.MaxInt32))}
	at := s.Time.UnixMilli()
	for _, pr := range s.Providers {
		pv := providerView{Name: pr.Name, Status: string(pr.Status),
			Summary: strconv.Itoa(pr.Serving) + " of " + strconv.Itoa(pr.Total) + " serving"}
		if pr.Probing > 0 {
			pv.Summary += ", " + strconv.Itoa(pr.Probing) + " probing"
		}
		if pr.Pipeline {
			pv.Summary += " · a bare pipeline"
		} else {
			pv.Summary += " · hedges " + hedgeText(pr.Hedges, pr.HedgesWon, pr.HedgesUnsent) + " · failovers " +
				strconv.FormatInt(pr.Failovers, 10)
		}
		for _, d := range pr.Deployments {
			r := row(d.Name, d.Name, string(d.Status), d.State, at)
			r.InFlight = strconv.Itoa(d.InFlight) + "/" + strconv.Itoa(d.Limit)
			if d.Waiting > 0 {
				r.InFlight += " +" + strconv.Itoa(d.Waiting) + " queued"
			}
			r.Hedges, r.Failovers = "—", "—"
			if !pr.Pipeline {
				r.Hedges = hedgeText(d.Hedges, d.HedgesWon, d.HedgesUnsent)
				r.Failovers = strconv.FormatInt(d.Failovers, 10)
			}
			pv.Rows = append(pv.Rows, r)
			for _, rt := range d.Routes {
				rr := row(d.Name+":"+rt.Model, rt.Model, string(rt.Status), rt.State, at)
				rr.Route = true
				rr.Estimate = estimateText(rt.Tokens)
				pv.Rows = append(pv.Rows, rr)
			}
		}
		v.Providers = append(v.Providers, pv)
	}
	v.Budgets = viewBudgets(s)
	for _, e := range s.Events {
		where := e.Deployment
		if e.Model != "" {
			where += " · " + e.Model
		}
		v.Events = append(v.Events, eventView{Time: e.Time.UTC().Format("15:04:05.000"), Where: where, Type: e.Type,
			Detail: e.Detail})
	}
	return v
}

// estimateText says how a route estimates its prompts: "o200k_base", "learnt: text ×1.18,
// frame ×0.90 (42 answers)", "heuristic"; "—" when unknown.
func estimateText(t *Tokens) string {
	switch {
	case t == nil:
		return "—"
	case t.Method == "tokenizer":
		return t.Encoding
	case t.Samples > 0:
		return "learnt: text ×" + strconv.FormatFloat(t.Text, 'f', 2, 64) + ", frame ×" + strconv.FormatFloat(t.Frame, 'f', 2, 64) +
			" (" + strconv.Itoa(t.Samples) + " answers)"
	case t.Method != "":
		return t.Method
	}
	return "—"
}

// row formats the state of a deployment or a route; at is the snapshot's time in milliseconds.
func row(key, name, status string, st State, at int64) rowView {
	r := rowView{Key: key, Name: name, Status: status, State: st.Circuit, Circuit: st.Circuit, Probe: "—", Pause: "—",
		Requests: share(st.RequestsLeft, st.RequestsPerMinute), Tokens: share(st.TokensLeft, st.TokensPerMinute),
		Latency: "—", Errors: "—", Estimate: "—", Spark: sparkline(st.Latency.RecentMs), Stall: stallText(st.Latency)}
	switch st.Circuit {
	case "closed":
		r.CircuitClass = "pass"
		if st.Failures > 0 {
			r.Circuit += " (" + strconv.Itoa(st.Failures) + " failed)"
		}
		switch {
		case st.Degraded && st.Routes > 0 && st.Serving == 0:
			r.Circuit, r.CircuitClass = "not serving", "fail" // paused or failing, every route
		case st.Degraded:
			r.Circuit, r.CircuitClass = "degraded", "warn"
		}
	case "half-open":
		r.Circuit, r.CircuitClass = "probing (half-open)", "warn"
		r.Probe = "probing"
	case "isolated":
		r.CircuitClass = "fail"
		r.Probe = "on reset"
	default:
		r.CircuitClass = "fail"
	}
	if st.Circuit == "open" {
		r.ProbeAt = deadline(at, st.NextProbeMs)
		r.Probe = countdown(st.NextProbeMs)
	}
	if st.Routes > 0 {
		// What a deployment serves: its routes' count, and its own circuit when it says more.
		r.Circuit += " · " + strconv.Itoa(st.Serving) + " of " + strconv.Itoa(st.Routes) + " models serving"
		if st.Host != "" && st.Host != "closed" {
			r.Circuit += " · host " + st.Host
		}
	}
	if st.Failing != "" {
		r.Failing, r.CircuitClass = st.Failing, "fail"
		if st.FailingCalls > 1 {
			r.Failing += " (" + strconv.Itoa(st.FailingCalls) + " calls in a row)"
		}
	}
	if st.PauseMs > 0 {
		r.PauseAt = deadline(at, st.PauseMs)
		r.Pause = countdown(st.PauseMs)
	}
	if l := st.Latency; l.P50Ms > 0 {
		r.Latency = formatLatency(msDuration(l.P50Ms)) + " · " + formatLatency(msDuration(l.P95Ms))
	} else if l.FirstTokenMs > 0 {
		r.Latency = "~" + formatLatency(msDuration(l.FirstTokenMs))
	}
	if st.Latency.Samples > 0 || st.Latency.ErrorRate > 0 {
		r.Errors = strconv.FormatFloat(100*st.Latency.ErrorRate, 'f', 0, 64) + "%"
	}
	return r
}

// stallText says when a stream of the row is cut for its silence after its first content:
// "1.0s (gaps ≤ 120ms)" once the rhythm is learnt (its 99th percentile of waits for bytes),
// "10s (learning)" before; "—" before any stream, or without stall detection.
func stallText(l Latency) string {
	switch {
	case l.StallAfterMs <= 0:
		return "—"
	case l.StreamGapMs <= 0:
		return formatLatency(msDuration(l.StallAfterMs)) + " (learning)"
	}
	return formatLatency(msDuration(l.StallAfterMs)) + " (gaps ≤ " + formatLatency(msDuration(l.StreamGapMs)) + ")"
}

// deadline is the moment, in milliseconds since the epoch, left ms after at, rounded to a
// tenth of a second: two readings of the same deadline a moment apart render the same, so an
// open page is sent a new state only when something changed.
func deadline(at, left int64) int64 {
	return (at + left + 50) / 100 * 100
}

// countdown renders a wait as the page's script does ("8.2s", "42s", "3m05s", "1.5h", "12.4d").
func countdown(ms int64) string {
	if ms <= 0 {
		return "now"
	}
	s := float64(ms) / 1000
	switch {
	case s < 10:
		return strconv.FormatFloat(math.Floor(s*10)/10, 'f', 1, 64) + "s"
	case s < 60:
		return strconv.Itoa(int(s)) + "s"
	case s < 3600:
		sec := int(s) % 60
		pad := ""
		if sec < 10 {
			pad = "0"
		}
		return strconv.Itoa(int(s)/60) + "m" + pad + strconv.Itoa(sec) + "s"
	case s < 48*3600:
		return strconv.FormatFloat(s/3600, 'f', 1, 64) + "h"
	}
	return strconv.FormatFloat(s/86400, 'f', 1, 64) + "d"
}

// share renders the share left of a per-minute limit ("40% of 500"), "—" when unknown.
func share(left float64, budget int) string {
	if left < 0 {
		return "—"
	}
	s := strconv.FormatFloat(100*left, 'f', 0, 64) + "%"
	if budget > 0 {
		s += " of " + strconv.Itoa(budget)
	}
	return s
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// The sparkline's size, in pixels.
const sparkW, sparkH = 96, 20

// sparkline draws the times in ms as an inline SVG polyline, the slowest at the top; "" for
// fewer than two. It holds numbers only, so it needs no escaping.
func sparkline(ms []float64) template.HTML {
	if len(ms) < 2 {
		return ""
	}
	top := 1.0
	for _, v := range ms {
		top = max(top, v)
	}
	var b strings.Builder
	b.WriteString(`<svg width="96" height="20" viewBox="0 0 96 20" role="img" aria-label="latest `)
	b.WriteString(strconv.Itoa(len(ms)))
	b.WriteString(` times to first content, up to `)
	b.WriteString(formatLatency(msDuration(top)))
	b.WriteString(`"><polyline points="`)
	for i, v := range ms {
		if i > 0 {
			b.WriteByte(' ')
		}
		x := float64(i) * (sparkW - 1) / float64(len(ms)-1)
		y := sparkH - 1 - v/top*(sparkH-2)
		b.WriteString(strconv.FormatFloat(x, 'f', 1, 64))
		b.WriteByte(',')
		b.WriteString(strconv.FormatFloat(y, 'f', 1, 64))
	}
	b.WriteString(`"/></svg>`)
	return template.HTML(b.String()) // #nosec: numbers and fixed text only
}

// stateTemplate renders a pageView as the inside of the page's <main>. html/template escapes
// every text it is given; the sparkline alone is markup, made of numbers.
var stateTemplate = template.Must(template.New("state").Parse(`<div class="top">` +
	`<span class="badge {{.Status}}" id="overall" data-status="{{.Status}}">{{.Status}}</span>` +
	`{{with .Chain}}<span>fallback chain: {{range $i, $n := .}}{{if $i}} → {{end}}<b>{{$n}}</b>{{end}}</span>{{end}}` +
	`<span id="shared">shared state: {{with .Shared}}{{if .Up}}<b class="pass">up</b>{{else}}<b class="warn">down</b>` +
	`{{with .Error}} <span class="mute">{{.}}</span>{{end}}{{end}}{{else}}<span class="mute">none</span>{{end}}</span></div>
{{range .Providers}}<h2 data-provider="{{.Name}}"><span class="badge {{.Status}}">{{.Status}}</span> {{.Name}} <small>{{.Summary}}</small></h2>
<table><thead><tr><th>deployment · model</th><th>circuit</th><th>next probe</th><th>pause</th><th>requests left</th>` +
	`<th>tokens left</th><th>p50 · p95</th><th>errors</th><th>recent latency</th><th>stream stall</th><th>in flight</th><th>hedges</th><th>failovers</th><th>token estimate</th></tr></thead><tbody>
{{range .Rows}}<tr{{if .Route}} class="route"{{end}} data-name="{{.Key}}" data-status="{{.Status}}" data-circuit="{{.State}}"` +
	` data-pause="{{if .PauseAt}}on{{else}}off{{end}}"{{if .Failing}} data-failing="on"{{end}}><td>{{.Name}}</td>` +
	`<td class="{{.CircuitClass}}">{{.Circuit}}{{with .Failing}}<br><span class="fail wrap">failing: {{.}}</span>{{end}}</td>` +
	`<td>{{if .ProbeAt}}<span data-until="{{.ProbeAt}}">{{.Probe}}</span>{{else}}{{.Probe}}{{end}}</td>` +
	`<td>{{if .PauseAt}}<span class="warn" data-until="{{.PauseAt}}">{{.Pause}}</span>{{else}}{{.Pause}}{{end}}</td>` +
	`<td>{{.Requests}}</td><td>{{.Tokens}}</td><td>{{.Latency}}</td><td>{{.Errors}}</td><td>{{.Spark}}</td><td>{{.Stall}}</td>` +
	`<td>{{.InFlight}}</td><td>{{.Hedges}}</td><td>{{.Failovers}}</td><td>{{.Estimate}}</td></tr>
{{end}}</tbody></table>
{{end}}{{template "budgets" .Budgets}}<h2>Recent events <small>{{.Kept}} kept of {{.Seen}} seen</small></h2>
{{if .Events}}<table id="events"><thead><tr><th>time (UTC, pipeline clock)</th><th>where</th><th>what</th><th>detail</th></tr></thead><tbody>
{{range .Events}}<tr><td>{{.Time}}</td><td>{{.Where}}</td><td>{{.Type}}</td><td class="wrap">{{.Detail}}</td></tr>
{{end}}</tbody></table>{{else}}<p class="mute" id="events">None yet: failed attempts, retries, give-ups, timeouts, circuit changes, pauses and probes show here.</p>{{end}}`))

// hedgeText is how the page shows hedges: those sent, those of them that won, and, when some
// were, the hedges cancelled before their request went out.
func hedgeText(sent, won, unsent int64) string {
	s := strconv.FormatInt(sent, 10) + " (" + strconv.FormatInt(won, 10) + " won"
	if unsent > 0 {
		s += ", " + strconv.FormatInt(unsent, 10) + " cancelled unsent"
	}
	return s + ")"
}
