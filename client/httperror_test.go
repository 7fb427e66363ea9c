package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// wantAnswer is the status every kind is answered with.
var wantAnswer = map[providers.ErrorKind]int{
	providers.KindRateLimited:     429,
	providers.KindBudgetExhausted: 429,
	providers.KindOverloaded:      503,
	providers.KindUnavailable:     503,
	providers.KindCircuitOpen:     503,
	providers.KindBulkheadFull:    503,
	providers.KindQuotaExhausted:  503,
	providers.KindTimeout:         504,
	providers.KindStreamTruncated: 502,
	providers.KindAuth:            502,
	providers.KindNotFound:        502,
	providers.KindRedirected:      502,
	providers.KindBadRequest:      400,
	providers.KindContextTooLong:  400,
	providers.KindContentFiltered: 422,
	providers.KindRefused:         422,
	providers.KindCanceled:        499,
	providers.KindUnknown:         500,
}

// errorBody is what WriteError writes.
type errorBody struct {
	Error struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
}

// written records what WriteError wrote for err.
func written(t *testing.T, err error) (*httptest.ResponseRecorder, errorBody) {
	t.Helper()
	rec := httptest.NewRecorder()
	client.WriteError(rec, err)
	var b errorBody
	if e := json.Unmarshal(rec.Body.Bytes(), &b); e != nil {
		t.Fatalf("body %q: %v", rec.Body.String(), e)
	}
	return rec, b
}

// Every kind has its deliberate status; only a kind that may pass advises a wait, rounded up
// to whole seconds in Retry-After; the body names the kind in steady's words and never
// repeats the provider's message, which here holds a key.
func TestHTTPStatus_EveryKindHasItsStatus(t *testing.T) {
	if len(wantAnswer) != len(providers.Kinds()) {
		t.Fatalf("the table has %d kinds, providers.Kinds %d: a kind has no deliberate status", len(wantAnswer), len(providers.Kinds()))
	}
	for _, k := range providers.Kinds() {
		want, ok := wantAnswer[k]
		if !ok {
			t.Fatalf("no status for kind %s", k)
		}
		e := &providers.Error{Provider: "openai", Kind: k, StatusCode: 418, RetryAfter: 1500 * time.Millisecond,
			Message: "upstream said: key " + sentinelKey + " at https://internal.example/v1 for org-secret"}
		status, wait := client.HTTPStatus(fmt.Errorf("asking: %w", e))
		wantWait := time.Duration(0)
		if k.Temporary() {
			wantWait = 1500 * time.Millisecond
		}
		if status != want || wait != wantWait {
			t.Errorf("%s: %d %v, want %d %v", k, status, wait, want, wantWait)
		}
		rec, b := written(t, e)
		retryAfter := rec.Header().Get("Retry-After")
		if rec.Code != want || (wantWait > 0) != (retryAfter == "2") || (wantWait == 0 && retryAfter != "") {
			t.Errorf("%s: wrote %d with Retry-After %q", k, rec.Code, retryAfter)
		}
		if b.Error.Kind != string(k) || b.Error.Message == "" {
			t.Errorf("%s: body %+v", k, b)
		}
		for _, leak := range []string{sentinelKey, "SENTINEL", "internal.example", "org-secret", "upstream said"} {
			if strings.Contains(rec.Body.String(), leak) {
				t.Errorf("%s: the body holds %q: %s", k, leak, rec.Body.String())
			}
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" || rec.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("%s: headers %v", k, rec.Header())
		}
	}
}

// Errors that are not a *providers.Error, a wait past the bound, a chain, a deferral.
func TestHTTPStatus_EveryErrorOfTheClientAndOthers(t *testing.T) {
	hour := 30 * time.Second
	now := time.Now()
	for _, tc := range []struct {
		name   string
		err    error
		status int
		wait   time.Duration // -1: about a minute and a half, from a deferral's decision
	}{
		{"nil", nil, 200, 0},
		{"another error", errors.New("json: cannot unmarshal"), 500, 0},
		{"the caller's cancellation", fmt.Errorf("reading: %w", context.Canceled), 499, 0},
		{"a bare deadline", context.DeadlineExceeded, 504, 0},
		{"a pipeline's open circuit", &resilience.CircuitOpenError{Pipeline: "openai", State: resilience.CircuitOpen, RetryAfter: 12 * time.Second}, 503, 12 * time.Second},
		{"a pipeline's redirect", &resilience.RedirectError{}, 502, 0},
		{"a kind with no status", &providers.Error{Kind: "brand_new"}, 500, 0},
		{"a hint past a day", &providers.Error{Kind: providers.KindRateLimited, RetryAfter: 48 * time.Hour}, 429, client.MaxRetryAfter},
		{"a negative hint", &providers.Error{Kind: providers.KindOverloaded, RetryAfter: -time.Second}, 503, 0},
		// A chain answers as its cause, and advises the earliest any provider may serve.
		{"a chain", &client.ChainError{
			Cause: &providers.Error{Provider: "a", Kind: providers.KindCircuitOpen, RetryAfter: hour},
			Failures: []*providers.Error{
				{Provider: "a", Kind: providers.KindCircuitOpen, RetryAfter: hour},
				{Provider: "b", Kind: providers.KindRateLimited, RetryAfter: 2 * time.Second},
				{Provider: "c", Kind: providers.KindAuth},
			}}, 503, 2 * time.Second},
		{"a chain where one provider may serve at once", &client.ChainError{
			Cause: &providers.Error{Provider: "a", Kind: providers.KindCircuitOpen, RetryAfter: hour},
			Failures: []*providers.Error{
				{Provider: "a", Kind: providers.KindCircuitOpen, RetryAfter: hour},
				{Provider: "b", Kind: providers.KindUnavailable},
			}}, 503, 0},
		{"a chain stopped by a bad request", &client.ChainError{
			Cause: &providers.Error{Provider: "b", Kind: providers.KindBadRequest},
			Failures: []*providers.Error{
				{Provider: "a", Kind: providers.KindRateLimited, RetryAfter: time.Second},
				{Provider: "b", Kind: providers.KindBadRequest},
			}}, 400, 0},
		{"a deferral", &deferral.Error{Err: &providers.Error{Kind: providers.KindRateLimited, RetryAfter: time.Second},
			Decision: deferral.Decision{Retry: true, At: now.Add(90 * time.Second)}}, 429, -1},
		{"a permanent deferral", &deferral.Error{Err: &providers.Error{Kind: providers.KindAuth},
			Decision: deferral.Decision{Retry: false}}, 502, 0},
		{"a deferral of no failure", &deferral.Error{Decision: deferral.Decision{Retry: true, Delay: time.Second}}, 500, time.Second},
	} {
		status, wait := client.HTTPStatus(tc.err)
		okWait := wait == tc.wait
		if tc.wait < 0 {
			okWait = wait > 80*time.Second && wait <= 90*time.Second
		}
		if status != tc.status || !okWait {
			t.Errorf("%s: %d %v, want %d %v", tc.name, status, wait, tc.status, tc.wait)
		}
	}
	// WriteError: nothing for no failure; a bare cancellation is a canceled; a wait past a day
	// is a day.
	rec := httptest.NewRecorder()
	client.WriteError(rec, nil)
	if rec.Body.Len() != 0 || len(rec.Header()) != 0 {
		t.Errorf("WriteError(nil) wrote %v %q", rec.Header(), rec.Body.String())
	}
	if rec, b := written(t, context.Canceled); rec.Code != 499 || b.Error.Kind != "canceled" {
		t.Errorf("context.Canceled: %d %+v", rec.Code, b)
	}
	if rec, b := written(t, errors.New("boom")); rec.Code != 500 || b.Error.Kind != "unknown" || b.Error.Message != "internal error" {
		t.Errorf("another error: %d %+v", rec.Code, b)
	}
	if rec, _ := written(t, &providers.Error{Kind: providers.KindBudgetExhausted, RetryAfter: 31 * 24 * time.Hour}); rec.Header().Get("Retry-After") != "86400" {
		t.Errorf("a month's wait: Retry-After %q", rec.Header().Get("Retry-After"))
	}
	e := &providers.Error{Kind: providers.KindContextTooLong, Overflow: &providers.ContextOverflow{Window: 128000, Requested: 130500}}
	if _, b := written(t, e); !strings.HasSuffix(b.Error.Message, ": it needs 130500 tokens, the window holds 128000") {
		t.Errorf("context_too_long: %q", b.Error.Message)
	}
}

// A service's handler answers its callers through WriteError, over real HTTP: the provider's
// 429 with its hint, a budget's refusal until its window ends, a refused request whose
// message held the key, a chain that failed, a deferred call, a call its caller gave up.
func TestWriteError_AnswersAServicesCallers(t *testing.T) {
	limited := mocks.NewServer(mocks.WithScript(mocks.RateLimited(2500 * time.Millisecond).Always()))
	defer limited.Close()
	picky := mocks.NewServer(mocks.WithScript(mocks.Error(400, "invalid_request_error", "no such parameter; your key "+sentinelKey+" is fine").Always()))
	defer picky.Close()
	down := mocks.NewServer(mocks.WithScript(mocks.Status(500).Always()))
	defer down.Close()
	up := mocks.NewServer(mocks.WithReply("ok"))
	defer up.Close()
	o := policy()
	o.RetryCount = 0
	price, err := cost.NewPrices("USD", []cost.Entry{{Provider: "openai", Model: "gpt-4o-mini", Price: cost.PerMillion(0.15, 0.6)}})
	if err != nil {
		t.Fatal(err)
	}
	tiny, _ := providers.ParseMoney("0.000000001")
	clients := map[string]*client.Client{
		"limited": newClient(t, openAIProvider("openai", limited, o)),
		"picky":   newClient(t, openAIProvider("openai", picky, o)),
		"chain":   newClient(t, openAIProvider("a", down, o), openAIProvider("b", limited, o), client.WithFallback("a", "b")),
		"budget": newClient(t, openAIProvider("openai", up, o), client.WithPrices(price),
			client.WithBudgets(cost.LedgerOptions{}, cost.Budget{Name: "hourly", Per: client.TenantDimension, Window: cost.Hour, Limit: tiny})),
	}
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		ctx := r.Context()
		var opts []client.CallOption
		if q.Get("deferred") != "" {
			opts = append(opts, client.Deferred(1))
		}
		if q.Get("gone") != "" {
			canceled, cancel := context.WithCancel(ctx)
			cancel()
			ctx = canceled
		}
		opts = append(opts, client.WithTenant(r.Header.Get("X-Tenant")))
		resp, err := clients[q.Get("c")].Chat(ctx, hello(), opts...)
		if err != nil {
			client.WriteError(w, err)
			return
		}
		_, _ = io.WriteString(w, resp.Message.Content)
	}))
	defer svc.Close()
	for _, tc := range []struct {
		query, tenant string
		status        int
		kind          string
		retryAfter    func(string) bool
	}{
		{"c=limited", "", 429, "rate_limited", func(s string) bool { return s == "3" }},
		{"c=picky", "", 400, "bad_request", func(s string) bool { return s == "" }},
		// The chain's cause is a's 500, the first failure that may pass, and may pass at once:
		// no wait, though b asked for one.
		{"c=chain", "", 503, "unavailable", func(s string) bool { return s == "" }},
		{"c=budget", "acme", 429, "budget_exhausted", func(s string) bool { n, err := fmt.Sscan(s, new(int)); return n == 1 && err == nil && s != "0" }},
		{"c=limited&deferred=1", "", 429, "rate_limited", func(s string) bool { return s == "3" }},
		{"c=limited&gone=1", "", 499, "canceled", func(s string) bool { return s == "" }},
	} {
		req, _ := http.NewRequest(http.MethodGet, svc.URL+"/?"+tc.query, nil)
		req.Header.Set("X-Tenant", tc.tenant)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		var b errorBody
		if err := json.Unmarshal(body, &b); err != nil {
			t.Fatalf("%s: %q: %v", tc.query, body, err)
		}
		if resp.StatusCode != tc.status || b.Error.Kind != tc.kind || !tc.retryAfter(resp.Header.Get("Retry-After")) {
			t.Errorf("%s: %d %s, Retry-After %q: %s", tc.query, resp.StatusCode, b.Error.Kind, resp.Header.Get("Retry-After"), body)
		}
		if strings.Contains(string(body), "SENTINEL") || strings.Contains(string(body), "no such parameter") {
			t.Errorf("%s: the body repeats the provider: %s", tc.query, body)
		}
	}
}
