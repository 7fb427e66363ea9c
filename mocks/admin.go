package mocks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The admin API: a running server steered over HTTP by a process that did not start it — a
// test in another language, a shell script, a test of a program that runs the fakellm command
// (see [Admin] for the Go client). Its paths live under AdminPrefix, which no provider's API
// uses.
//
//	GET  /_fake/                    what the API offers
//	GET  /_fake/state               the settings in force and the counters (State)
//	GET  /_fake/journal?last=N      the journal's counters and its last N requests (no headers, no bodies)
//	PUT  /_fake/script              a script: {"route"|"model": name, "steps": [step, …]} (neither: the default)
//	PUT  /_fake/latency             a latency profile: {"route"|"model"|"key": name, "profile": {…}} (neither: every request)
//	PUT  /_fake/limits/rate         rate limits: {"route"|"key": name, "limits": {…}} (neither: every key)
//	PUT  /_fake/limits/concurrency  a concurrency limit: {"route": name, "max": n} or {"max": n, "openAIStatus": 529}
//	POST /_fake/reset               back to the start settings: {} for everything, {"route": name} for one route
//
// A change applies to the requests that arrive after its answer (a request in flight keeps the
// step, the delays and the budgets it began with), and answers 200 with the State now in
// force. Every bad value is answered 400 with an [AdminError] body naming the field, the value
// and what is allowed.

// AdminPrefix is the path under which a server answers its admin API.
const AdminPrefix = "/_fake/"

// MaxAdminBodyBytes bounds the body of an admin request (a longer one is answered 413), and
// MaxAdminSteps the steps of one script set through it.
const (
	MaxAdminBodyBytes = 1 << 20
	MaxAdminSteps     = 10000
)

// MaxAdminJournal is the most requests GET /_fake/journal lists.
const MaxAdminJournal = 1000

// WithoutAdmin turns the admin API off: its paths are then answered 404, as any unknown path.
// It is on by default; it answers loopback peers only, whatever the server listens on.
func WithoutAdmin() Option { return func(o *options) { o.noAdmin = true } }

// AdminURL returns the base URL of the server's admin API: URL() + AdminPrefix.
func (s *Server) AdminURL() string { return s.ts.URL + AdminPrefix }

// isAdminPath reports whether p belongs to the admin API.
func isAdminPath(p string) bool { return p == "/_fake" || strings.HasPrefix(p, AdminPrefix) }

// adminEndpoint is one endpoint of the admin API, for the index and for 405s.
type adminEndpoint struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Does   string `json:"does"`
}

var adminEndpoints = []adminEndpoint{
	{http.MethodGet, "/_fake/", "this list"},
	{http.MethodGet, "/_fake/state", "the settings in force and the counters"},
	{http.MethodGet, "/_fake/journal", "the journal's counters and its last ?last=N requests (at most 1000; default 100)"},
	{http.MethodPut, "/_fake/script", `{"route"|"model": name, "steps": [step, ...]}: a script (neither name: the default script; [] removes one)`},
	{http.MethodPut, "/_fake/latency", `{"route"|"model"|"key": name, "profile": {...}}: a latency profile (neither name: every request's; null or {} removes one)`},
	{http.MethodPut, "/_fake/limits/rate", `{"route"|"key": name, "limits": {"requestsPerMinute": n, "tokensPerMinute": n, "minuteMs": n}}: rate limits (neither name: every key's; null removes them, {} exempts a route or key)`},
	{http.MethodPut, "/_fake/limits/concurrency", `{"route": name, "max": n} or {"max": n, "openAIStatus": 503|529|429}: a concurrency limit (0 removes it)`},
	{http.MethodPost, "/_fake/reset", `{} puts everything back as the server started; {"route": name} one route`},
}

// AdminError is the body of every refusal of the admin API (4xx), and the error the [Admin]
// client returns for it.
type AdminError struct {
	// StatusCode is the HTTP status (set by the client; not in the body).
	StatusCode int `json:"-"`
	// Message says what went wrong in a sentence.
	Message string `json:"message"`
	// Problems lists every bad value, when the request had some.
	Problems []Problem `json:"problems,omitempty"`
}

func (e *AdminError) Error() string {
	var b strings.Builder
	b.WriteString("mocks: admin API")
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, " (%d)", e.StatusCode)
	}
	b.WriteString(": ")
	b.WriteString(e.Message)
	for i, p := range e.Problems {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(p.Error())
	}
	return b.String()
}

// serveAdmin answers one request of the admin API.
func (s *Server) serveAdmin(w http.ResponseWriter, r *http.Request) {
	if msg := refuseAdminPeer(r); msg != "" {
		writeAdminError(w, http.StatusForbidden, &AdminError{Message: msg})
		return
	}
	p := strings.TrimSuffix(r.URL.Path, "/")
	var ep *adminEndpoint
	for i := range adminEndpoints {
		if strings.TrimSuffix(adminEndpoints[i].Path, "/") == p {
			ep = &adminEndpoints[i]
		}
	}
	if ep == nil {
		writeAdminError(w, http.StatusNotFound, &AdminError{Message: "no admin endpoint " + strconv.Quote(clip(r.URL.Path, maxScenarioName)) +
			": see GET " + AdminPrefix})
		return
	}
	if r.Method != ep.Method {
		w.Header().Set("Allow", ep.Method)
		writeAdminError(w, http.StatusMethodNotAllowed, &AdminError{Message: r.Method + " is not allowed on " + ep.Path + ": use " + ep.Method})
		return
	}
	var body []byte
	if r.Method != http.MethodGet {
		var aerr *AdminError
		status := http.StatusBadRequest
		if body, status, aerr = readAdminBody(w, r); aerr != nil {
			writeAdminError(w, status, aerr)
			return
		}
	}
	var problems []Problem
	switch p {
	case "/_fake":
		writeAdminJSON(w, struct {
			Endpoints []adminEndpoint `json:"endpoints"`
			Routes    []string        `json:"routes"`
		}{adminEndpoints, Routes})
		return
	case "/_fake/state":
		writeAdminJSON(w, s.State())
		return
	case "/_fake/journal":
		n, prob := lastParam(r.URL.Query())
		if prob != nil {
			writeAdminError(w, http.StatusBadRequest, &AdminError{Message: "bad query", Problems: []Problem{*prob}})
			return
		}
		writeAdminJSON(w, JournalView{Stats: s.journal.Stats(), Requests: s.journal.last(n)})
		return
	case "/_fake/script":
		problems = s.adminScript(body)
	case "/_fake/latency":
		problems = s.adminLatency(body)
	case "/_fake/limits/rate":
		problems = s.adminRateLimits(body)
	case "/_fake/limits/concurrency":
		problems = s.adminConcurrency(body)
	case "/_fake/reset":
		problems = s.adminReset(body)
	}
	if len(problems) > 0 {
		writeAdminError(w, http.StatusBadRequest, &AdminError{Message: "bad request to " + ep.Path + ", nothing changed", Problems: problems})
		return
	}
	writeAdminJSON(w, s.State())
}

// refuseAdminPeer returns why the admin API refuses r, "" when it does not: it answers a peer
// on a loopback address only, and only requests for a loopback host (a page elsewhere cannot
// rebind a name of its own to 127.0.0.1 and steer the server), relayed by no proxy (a reverse
// proxy on this machine connects from loopback for anyone), from no other origin (a page in a
// browser on this machine cannot steer it either).
func refuseAdminPeer(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return "the admin API answers loopback peers only"
	}
	if !loopbackHost(r.Host) {
		return "the admin API answers requests for a loopback host only (127.0.0.1, ::1 or localhost)"
	}
	for _, h := range [...]string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Real-Ip"} {
		if _, ok := r.Header[h]; ok {
			// A reverse proxy on this machine connects from loopback for whoever it serves.
			return "the admin API does not answer requests relayed by a proxy (" + h + ")"
		}
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !loopbackHost(u.Host) {
			return "the admin API does not answer requests from another origin"
		}
	}
	return ""
}

// loopbackHost reports whether hostport names a loopback host: localhost or a loopback IP.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// readAdminBody reads the body of a change: at most MaxAdminBodyBytes of JSON, nested at most
// MaxJSONDepth deep; an empty body reads as {}.
func readAdminBody(w http.ResponseWriter, r *http.Request) ([]byte, int, *AdminError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxAdminBodyBytes))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, http.StatusRequestEntityTooLarge, &AdminError{Message: fmt.Sprintf("the body is longer than %d bytes", MaxAdminBodyBytes)}
	case err != nil:
		return nil, http.StatusBadRequest, &AdminError{Message: "the body could not be read"}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return []byte("{}"), 0, nil
	}
	if ct := r.Header.Get("Content-Type"); ct != "" || r.Header.Get("Origin") != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return nil, http.StatusUnsupportedMediaType, &AdminError{Message: "the body must be JSON, sent as Content-Type: application/json"}
		}
	}
	if !withinDepth(body, MaxJSONDepth) {
		return nil, http.StatusBadRequest, &AdminError{Message: fmt.Sprintf("the body nests JSON deeper than %d levels", MaxJSONDepth)}
	}
	return body, 0, nil
}

func writeAdminJSON(w http.ResponseWriter, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		writeAdminError(w, http.StatusInternalServerError, &AdminError{Message: "cannot encode the answer: " + err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(b, '\n'))
}

func writeAdminError(w http.ResponseWriter, status int, e *AdminError) {
	b, _ := json.MarshalIndent(struct {
		Error *AdminError `json:"error"`
	}{e}, "", "  ")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
