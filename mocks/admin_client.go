package mocks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// AdminClient steers a running fake server through its admin API (see [AdminPrefix]): the
// server of another process — the fakellm command, a server a test harness started — or one
// of this process, as [Server]'s own methods do. Every method takes a context, sends one
// request and returns once the server has applied the change (it applies to the requests that
// arrive after), or the server's refusal as an *[AdminError] naming each bad value. An
// AdminClient is safe for concurrent use.
type AdminClient struct {
	base string
	hc   *http.Client
}

// maxAdminAnswer bounds what the client reads of an answer of the admin API.
const maxAdminAnswer = 16 << 20

// Admin returns a client of the admin API of the server at baseURL, the server's own URL
// (such as http://127.0.0.1:8080, what [Server.URL] and fakellm print; a trailing slash or
// the admin prefix is accepted too). It keeps no connection open between calls, so it needs
// no closing.
func Admin(baseURL string) *AdminClient {
	base := strings.TrimSuffix(strings.TrimSuffix(baseURL, "/"), strings.TrimSuffix(AdminPrefix, "/"))
	return &AdminClient{base: strings.TrimSuffix(base, "/"), hc: &http.Client{
		Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil},
		// Admin calls do not follow redirects: the API never sends one.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// URL returns the base URL of the admin API the client talks to.
func (a *AdminClient) URL() string { return a.base + AdminPrefix }

// State returns what the server does now (see [State]).
func (a *AdminClient) State(ctx context.Context) (*State, error) {
	var st State
	if err := a.do(ctx, http.MethodGet, "state", nil, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Journal returns the journal's counters and a summary of its last requests (at most last,
// which must lie in [0, MaxAdminJournal]).
func (a *AdminClient) Journal(ctx context.Context, last int) (*JournalView, error) {
	var v JournalView
	if err := a.do(ctx, http.MethodGet, "journal?last="+strconv.Itoa(last), nil, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// scriptBody is the body of PUT /_fake/script.
type scriptBody struct {
	Route string `json:"route,omitempty"`
	Model string `json:"model,omitempty"`
	Steps []Step `json:"steps"`
}

// Script replaces (and rewinds) the server's default sequence of steps, as [Server.Script].
func (a *AdminClient) Script(ctx context.Context, steps ...Step) error {
	return a.do(ctx, http.MethodPut, "script", scriptBody{Steps: nonNil(steps)}, nil)
}

// RouteScript replaces (and rewinds) the steps of one route, as [Server.RouteScript]; no steps
// removes the route's script.
func (a *AdminClient) RouteScript(ctx context.Context, route string, steps ...Step) error {
	if route == "" {
		return errors.New("mocks: admin: RouteScript needs a route")
	}
	return a.do(ctx, http.MethodPut, "script", scriptBody{Route: route, Steps: nonNil(steps)}, nil)
}

// ModelScript replaces (and rewinds) the steps of one model, as [Server.ModelScript]; no steps
// removes the model's script.
func (a *AdminClient) ModelScript(ctx context.Context, model string, steps ...Step) error {
	if model == "" {
		return errors.New("mocks: admin: ModelScript needs a model")
	}
	return a.do(ctx, http.MethodPut, "script", scriptBody{Model: model, Steps: nonNil(steps)}, nil)
}

func nonNil(steps []Step) []Step {
	if steps == nil {
		return []Step{}
	}
	return steps
}

// latencyBody is the body of PUT /_fake/latency.
type latencyBody struct {
	Route   string          `json:"route,omitempty"`
	Model   string          `json:"model,omitempty"`
	Key     string          `json:"key,omitempty"`
	Profile *LatencyProfile `json:"profile"`
}

// Latency replaces the latency profile of every request, as [Server.Latency]; the zero profile
// removes it.
func (a *AdminClient) Latency(ctx context.Context, p LatencyProfile) error {
	return a.do(ctx, http.MethodPut, "latency", latencyBody{Profile: &p}, nil)
}

// RouteLatency replaces the latency profile of one route, as [Server.RouteLatency].
func (a *AdminClient) RouteLatency(ctx context.Context, route string, p LatencyProfile) error {
	if route == "" {
		return errors.New("mocks: admin: RouteLatency needs a route")
	}
	return a.do(ctx, http.MethodPut, "latency", latencyBody{Route: route, Profile: &p}, nil)
}

// ModelLatency replaces the latency profile of one model, as [Server.ModelLatency].
func (a *AdminClient) ModelLatency(ctx context.Context, model string, p LatencyProfile) error {
	if model == "" {
		return errors.New("mocks: admin: ModelLatency needs a model")
	}
	return a.do(ctx, http.MethodPut, "latency", latencyBody{Model: model, Profile: &p}, nil)
}

// KeyLatency replaces the latency profile of one API key, as [Server.KeyLatency].
func (a *AdminClient) KeyLatency(ctx context.Context, key string, p LatencyProfile) error {
	if key == "" {
		return errors.New("mocks: admin: KeyLatency needs a key")
	}
	return a.do(ctx, http.MethodPut, "latency", latencyBody{Key: key, Profile: &p}, nil)
}

// rateBody is the body of PUT /_fake/limits/rate.
type rateBody struct {
	Route  string      `json:"route,omitempty"`
	Key    string      `json:"key,omitempty"`
	Limits *RateLimits `json:"limits"`
}

// wireLimits is l as JSON carries it: its minute in milliseconds.
func wireLimits(l *RateLimits) *RateLimits {
	if l == nil {
		return nil
	}
	w := minuteMs(*l)
	return &w
}

// RateLimits replaces the rate limits of every API key, as [Server.RateLimits]; nil removes
// them. A RateLimits.Minute travels in whole milliseconds.
func (a *AdminClient) RateLimits(ctx context.Context, l *RateLimits) error {
	return a.do(ctx, http.MethodPut, "limits/rate", rateBody{Limits: wireLimits(l)}, nil)
}

// RouteRateLimits replaces the rate limits of one route, as [Server.RouteRateLimits]; nil
// removes them.
func (a *AdminClient) RouteRateLimits(ctx context.Context, route string, l *RateLimits) error {
	if route == "" {
		return errors.New("mocks: admin: RouteRateLimits needs a route")
	}
	return a.do(ctx, http.MethodPut, "limits/rate", rateBody{Route: route, Limits: wireLimits(l)}, nil)
}

// KeyRateLimits replaces the rate limits of one API key, as [Server.KeyRateLimits]; nil
// removes them.
func (a *AdminClient) KeyRateLimits(ctx context.Context, key string, l *RateLimits) error {
	if key == "" {
		return errors.New("mocks: admin: KeyRateLimits needs a key")
	}
	return a.do(ctx, http.MethodPut, "limits/rate", rateBody{Key: key, Limits: wireLimits(l)}, nil)
}

// concurrencyBody is the body of PUT /_fake/limits/concurrency.
type concurrencyBody struct {
	Route string `json:"route,omitempty"`
	Max   int    `json:"max"`
}

// SetConcurrencyLimit changes the number of calls the server serves at once, as
// [Server.SetConcurrencyLimit]; 0 removes the limit. (The status of an OpenAI call over the
// limit, 503, 529 or 429, is set with {"max": n, "openAIStatus": 529} in the JSON API.)
func (a *AdminClient) SetConcurrencyLimit(ctx context.Context, n int) error {
	return a.do(ctx, http.MethodPut, "limits/concurrency", concurrencyBody{Max: n}, nil)
}

// SetRouteConcurrencyLimit changes the number of calls one route serves at once, as
// [Server.SetRouteConcurrencyLimit]; 0 removes the route's limit.
func (a *AdminClient) SetRouteConcurrencyLimit(ctx context.Context, route string, n int) error {
	if route == "" {
		return errors.New("mocks: admin: SetRouteConcurrencyLimit needs a route")
	}
	return a.do(ctx, http.MethodPut, "limits/concurrency", concurrencyBody{Route: route, Max: n}, nil)
}

// Reset puts the server back as it started, as [Server.Reset].
func (a *AdminClient) Reset(ctx context.Context) error {
	return a.do(ctx, http.MethodPost, "reset", struct{}{}, nil)
}

// ResetRoute puts one route back as the server started, as [Server.ResetRoute].
func (a *AdminClient) ResetRoute(ctx context.Context, route string) error {
	if route == "" {
		return errors.New("mocks: admin: ResetRoute needs a route")
	}
	return a.do(ctx, http.MethodPost, "reset", struct {
		Route string `json:"route"`
	}{route}, nil)
}

// do sends one request to the admin API and decodes its answer into out (nil: discarded).
func (a *AdminClient) do(ctx context.Context, method, path string, in, out any) error {
	if ctx == nil {
		return errors.New("mocks: admin: nil context")
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("mocks: admin: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+AdminPrefix+path, body)
	if err != nil {
		return fmt.Errorf("mocks: admin: %w", err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := a.hc.Do(req)
	if err != nil {
		return fmt.Errorf("mocks: admin: %w", err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxAdminAnswer))
	if err != nil {
		return fmt.Errorf("mocks: admin: reading the answer to %s %s: %w", method, path, err)
	}
	if res.StatusCode != http.StatusOK {
		var e struct {
			Error *AdminError `json:"error"`
		}
		if json.Unmarshal(data, &e) != nil || e.Error == nil {
			return &AdminError{StatusCode: res.StatusCode, Message: fmt.Sprintf("%s %s answered %s (not the admin API?)",
				method, path, res.Status)}
		}
		e.Error.StatusCode = res.StatusCode
		return e.Error
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("mocks: admin: the answer to %s %s: %w", method, path, err)
	}
	return nil
}
