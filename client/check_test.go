package client_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// twoProviders is a client with a primary and a secondary provider, each on its own fake
// server, chained in that order.
func twoProviders(t *testing.T, opts ...client.Option) (*client.Client, *mocks.Server, *mocks.Server) {
	t.Helper()
	p, s := mocks.NewServer(), mocks.NewServer()
	t.Cleanup(p.Close)
	t.Cleanup(s.Close)
	o := policy()
	o.CircuitBreakerThreshold = 3
	c := newClient(t, append([]client.Option{openAIProvider("primary", p, o), openAIProvider("secondary", s, o),
		client.WithFallback("primary", "secondary")}, opts...)...)
	return c, p, s
}

// A header HTTP cannot carry is the caller's mistake: bad_request before anything is sent, no
// fallback, no circuit failure, and the value never repeated raw. Before, Go's transport
// refused the request, the pipeline counted a provider failure, the chain walked on, and three
// such calls opened the healthy provider's circuit for every caller.
func TestCallOptions_HeaderHTTPCannotCarryIsABadRequest(t *testing.T) {
	c, p, s := twoProviders(t)
	cases := map[string]client.CallOption{
		"CRLF in a value":   client.WithHeader("X-Tenant", "acme\r\nX-Admin: yes"),
		"NUL in a value":    client.WithHeader("X-Tenant", "acme\x00"),
		"space in a name":   client.WithHeader("X Tenant", "acme"),
		"colon in a name":   client.WithHeader("X-Tenant:", "acme"),
		"LF in request ID":  client.WithRequestID("job-1\nforged log line"),
		"too long an ID":    client.WithRequestID(strings.Repeat("j", client.MaxRequestIDBytes+1)),
		"DEL in request ID": client.WithRequestID("job\x7f"),
		"an Upgrade header": client.WithHeader("Upgrade", "websocket"),
		"a Connection":      client.WithHeader("connection", "upgrade"),
		"a Content-Length":  client.WithHeader("Content-Length", "12"),
	}
	for name, opt := range cases {
		for range 4 { // more than the circuit's threshold of 3
			_, err := c.Chat(context.Background(), hello(), opt)
			e := asProviderError(t, err)
			if e.Kind != providers.KindBadRequest {
				t.Fatalf("%s: %v, want bad_request", name, err)
			}
			var ce *client.ChainError
			if errors.As(err, &ce) {
				t.Fatalf("%s: the chain was walked: %v", name, err)
			}
			if msg := err.Error(); strings.ContainsAny(msg, "\r\n\x00\x7f") || strings.Contains(msg, "X-Admin: yes") {
				t.Fatalf("%s: the error repeats the raw value: %q", name, msg)
			}
			if len(err.Error()) > 600 {
				t.Fatalf("%s: the error is %d bytes long", name, len(err.Error()))
			}
		}
		st, err := c.ChatStream(context.Background(), hello(), opt)
		if err == nil {
			_ = st.Close()
		}
		if providers.KindOf(err) != providers.KindBadRequest {
			t.Fatalf("%s: stream: %v", name, err)
		}
	}
	if n, m := p.Journal().Len(), s.Journal().Len(); n+m != 0 {
		t.Fatalf("requests were sent: %d to the primary, %d to the secondary", n, m)
	}
	for name, pl := range c.Circuits() {
		if st := pl.CircuitInfo(); st.State != resilience.CircuitClosed || st.ConsecutiveFailures != 0 {
			t.Fatalf("%s circuit %+v after the caller's mistakes", name, st)
		}
	}
}

// A request ID an error prints is safe text: escaped, at most 128 bytes.
func TestError_PrintsTheRequestIDAsSafeText(t *testing.T) {
	e := &providers.Error{Kind: providers.KindUnavailable, ClientRequestID: "job\n" + strings.Repeat("x", 400)}
	msg := e.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, `[call job\nxxx`) {
		t.Fatalf("Error() = %q", msg)
	}
	if i := strings.Index(msg, "[call "); len(msg)-i > 128+len("[call …]")+2 {
		t.Fatalf("the request ID takes %d bytes: %q", len(msg)-i, msg[i:])
	}
}

// Extra fields cannot turn a call into another kind of call; fields for a provider's name and
// for its GenAI system both apply, the name's winning; a target that names nothing is refused.
func TestCallOptions_ExtraFieldsCannotChangeTheKindOfCall(t *testing.T) {
	c, p, _ := twoProviders(t)
	for _, f := range []string{"stream", "stream_options", "model", "n"} {
		for _, target := range []string{"primary", providers.SystemOpenAI} {
			_, err := c.Chat(context.Background(), hello(), client.WithExtraFields(target, map[string]any{f: true}))
			if e := asProviderError(t, err); e.Kind != providers.KindBadRequest || !strings.Contains(e.Message, f) {
				t.Fatalf("%s for %s: %v, want bad_request naming the field", f, target, err)
			}
		}
	}
	_, err := c.Chat(context.Background(), hello(), client.WithExtraFields("primry", map[string]any{"user": "u"}))
	if e := asProviderError(t, err); e.Kind != providers.KindBadRequest || !strings.Contains(e.Message, "primry") {
		t.Fatalf("unknown target: %v", err)
	}
	if n := p.Journal().Len(); n != 0 {
		t.Fatalf("%d requests sent for refused options", n)
	}

	_, err = c.Chat(context.Background(), hello(),
		client.WithExtraFields(providers.SystemOpenAI, map[string]any{"user": "from-system", "service_tier": "flex"}),
		client.WithExtraFields("PRIMARY", map[string]any{"user": "from-name"}))
	if err != nil {
		t.Fatal(err)
	}
	body := lastBody(t, p)
	if body["user"] != "from-name" || body["service_tier"] != "flex" {
		t.Fatalf("body user=%v service_tier=%v: want the name's user and the system's tier", body["user"], body["service_tier"])
	}
}

// A per-call option never turns the policy's own limit off, and a job's attempt starts at 1.
func TestCallOptions_RefusesZeroTimeoutAndAttempt(t *testing.T) {
	c, p, _ := twoProviders(t)
	for name, opt := range map[string]client.CallOption{
		"WithTimeout(0)":   client.WithTimeout(0),
		"WithTimeout(-1s)": client.WithTimeout(-time.Second),
		"Deferred(0)":      client.Deferred(0),
		"Deferred(-3)":     client.Deferred(-3),
	} {
		_, err := c.Chat(context.Background(), hello(), opt)
		if e := asProviderError(t, err); e.Kind != providers.KindBadRequest {
			t.Fatalf("%s: %v, want bad_request", name, err)
		}
		var de *deferral.Error
		if errors.As(err, &de) && de.Decision.Retry {
			t.Fatalf("%s: a refused option is deferred for a retry: %v", name, de.Decision)
		}
	}
	if n := p.Journal().Len(); n != 0 {
		t.Fatalf("%d requests sent for refused options", n)
	}
}

// A nil context is an error on every entry point, never a panic.
func TestClient_NilContextIsAnError(t *testing.T) {
	c, _, _ := twoProviders(t)
	//lint:ignore SA1012 the nil context is the point of the test
	var nilCtx context.Context
	if _, err := c.Chat(nilCtx, hello()); providers.KindOf(err) != providers.KindBadRequest {
		t.Fatalf("Chat: %v", err)
	}
	if _, err := c.ChatStream(nilCtx, hello(), client.WithRequestID("r-1")); providers.KindOf(err) != providers.KindBadRequest {
		t.Fatalf("ChatStream: %v", err)
	}
	if _, err := c.Embed(nilCtx, &providers.EmbedRequest{Inputs: []string{"x"}}); providers.KindOf(err) != providers.KindBadRequest {
		t.Fatalf("Embed: %v", err)
	}
}

// Every error carries the call's request ID, validation errors included.
func TestCallOptions_EveryErrorCarriesTheRequestID(t *testing.T) {
	c, _, _ := twoProviders(t)
	id := client.WithRequestID("nightly/doc-42")
	for name, call := range map[string]func() error{
		"nil request": func() error { _, err := c.Chat(context.Background(), nil, id); return err },
		"unknown policy": func() error {
			_, err := c.Chat(context.Background(), hello(), id, client.WithPolicy("nope"))
			return err
		},
		"bad timeout": func() error { _, err := c.Chat(context.Background(), hello(), id, client.WithTimeout(0)); return err },
		"stream, no messages": func() error {
			_, err := c.ChatStream(context.Background(), &providers.ChatRequest{}, id)
			return err
		},
		"embed, no input": func() error {
			_, err := c.Embed(context.Background(), &providers.EmbedRequest{}, id)
			return err
		},
	} {
		err := call()
		if e := asProviderError(t, err); e.ClientRequestID != "nightly/doc-42" || !strings.Contains(err.Error(), "nightly/doc-42") {
			t.Fatalf("%s: %v carries no request ID", name, err)
		}
	}
}

// Call-time names match configuration names as the configuration matches them: ignoring case.
func TestCallOptions_NamesMatchIgnoringCase(t *testing.T) {
	c, p, s := twoProviders(t, client.WithPolicies(map[string]resilience.Options{"Batch": policy()}))
	if _, err := c.Chat(context.Background(), hello(), client.WithPolicy("batch"), client.WithProviders("SECONDARY")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Chat(context.Background(), hello(), client.WithoutProviders("Primary")); err != nil {
		t.Fatal(err)
	}
	if p.Journal().Len() != 0 || s.Journal().Len() != 2 {
		t.Fatalf("primary %d, secondary %d requests; want 0 and 2", p.Journal().Len(), s.Journal().Len())
	}
}

// WithDeployments validates weights and limits as the configuration does: no overflow, no
// panic while routing.
func TestWithDeployments_RefusesWeightsThatOverflow(t *testing.T) {
	ss := servers(t, 2)
	deps := deploymentsOn(ss, math.MaxInt, math.MaxInt)
	_, err := client.New(client.WithDeployments("p", policy(), client.StrategyWeighted, deps...))
	if err == nil || !strings.Contains(err.Error(), "Weight") || !strings.Contains(err.Error(), "100000000") {
		t.Fatalf("got %v, want the weight refused with its range", err)
	}
	deps = deploymentsOn(ss, 100_000_000, 100_000_000)
	c := newClient(t, client.WithDeployments("p", policy(), client.StrategyWeighted, deps...))
	for range 10 {
		if _, err := c.Chat(context.Background(), hello()); err != nil {
			t.Fatal(err)
		}
	}
}

// The pipeline itself never counts a request Go's transport refused for its headers against
// the provider: a bare pipeline under go-openai or any http.Client is protected too.
func TestPipeline_HeaderTheTransportRefusesIsNotAProviderFailure(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	o := policy()
	o.CircuitBreakerThreshold = 2
	p, err := resilience.New(o, resilience.WithName("openai"))
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	prov, err := openai.New(openai.Config{Name: "openai", BaseURL: s.OpenAIBaseURL(), APIKey: sentinelKey,
		HTTPClient: &http.Client{Transport: &badHeader{next: p.Wrap(tr)}}, Model: "gpt-4o-mini"})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		_, err := prov.Chat(context.Background(), hello())
		if !errors.Is(err, resilience.ErrInvalidRequest) || providers.KindOf(err) != providers.KindBadRequest {
			t.Fatalf("got %v, want a bad_request matching ErrInvalidRequest", err)
		}
	}
	if st := p.CircuitInfo(); st.State != resilience.CircuitClosed || st.ConsecutiveFailures != 0 {
		t.Fatalf("circuit %+v", st)
	}
	if s.Journal().Len() != 0 {
		t.Fatal("the request was sent")
	}
}

// badHeader adds a header value with a line break to every request, as a careless caller's
// middleware would.
type badHeader struct{ next http.RoundTripper }

func (b *badHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Tenant", "acme\r\nX-Admin: yes")
	return b.next.RoundTrip(r)
}
