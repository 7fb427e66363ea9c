package interop

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// Failures as aimock serves them: its error envelopes in each wire format, its key check, its
// injected faults, a stream it breaks midway, and steady's client retrying and falling back
// across the two wire formats.

// aimockFailure is a failing answer and the *providers.Error steady must make of it.
type aimockFailure struct {
	name string
	// response is the fixture's error answer in both wire formats, unless anthropic is set.
	response, anthropic obj
	// chaos, when set, has aimock break the exchange instead of answering.
	chaos obj
	// key replaces the right API key.
	key string

	kind providers.ErrorKind
	// status and errType are what steady reports for a failure without an answer; with one,
	// they come from the answer.
	status  int
	errType string
}

func aimockError(status int, errType, message string, extra obj) obj {
	e := obj{"type": errType, "message": message}
	maps.Copy(e, extra)
	return obj{"error": e, "status": status}
}

var aimockFailures = []aimockFailure{
	{name: "rate limited", kind: providers.KindRateLimited,
		response: withField(aimockError(429, "rate_limit_error", "Rate limit reached for requests", obj{"code": "rate_limit_exceeded"}), "retryAfter", 7)},
	{name: "out of quota", kind: providers.KindQuotaExhausted,
		response:  aimockError(429, "insufficient_quota", "You exceeded your current quota, please check your plan and billing details.", obj{"code": "insufficient_quota"}),
		anthropic: aimockError(400, "invalid_request_error", "Your credit balance is too low to access the Anthropic API.", nil)},
	{name: "overloaded", kind: providers.KindOverloaded,
		response: aimockError(529, "overloaded_error", "Overloaded", nil)},
	{name: "server error", kind: providers.KindUnavailable,
		response: aimockError(500, "api_error", "Internal server error", nil)},
	{name: "context too long", kind: providers.KindContextTooLong,
		response: aimockError(400, "invalid_request_error", "prompt is too long: 212000 tokens > 200000 maximum", obj{"code": "context_length_exceeded"})},
	{name: "bad request", kind: providers.KindBadRequest,
		response: aimockError(400, "invalid_request_error", "messages: roles must alternate", nil)},
	{name: "wrong key", key: "sk-wrong-key-4567", kind: providers.KindAuth, status: 401, errType: "authentication_error"},
	{name: "malformed body", chaos: obj{"malformedRate": 1}, kind: providers.KindUnavailable, status: 200},
	{name: "connection dropped", chaos: obj{"disconnectRate": 1}, kind: providers.KindUnavailable},
}

func withField(o obj, k string, v any) obj { o[k] = v; return o }

// fixtures returns one fixture per wire format, told apart by model.
func (f aimockFailure) fixtures() []fixture {
	var fs []fixture
	for _, wf := range wireFormats {
		resp := f.answer(wf)
		if resp == nil {
			resp = obj{"content": "This answer never arrives."}
		}
		fs = append(fs, fixture{Match: obj{"userMessage": "fail: " + f.name, "model": wf.model}, Response: resp, Chaos: f.chaos})
	}
	return fs
}

// answer is the fixture's error answer in wf, nil when aimock fails otherwise.
func (f aimockFailure) answer(wf wireFormat) obj {
	if wf.name == "anthropic" && f.anthropic != nil {
		return f.anthropic
	}
	if f.chaos != nil || f.key != "" {
		return nil
	}
	return f.response
}

// want returns the status, error type and retry-after steady must report in wf.
func (f aimockFailure) want(wf wireFormat) (status int, errType string, retryAfter time.Duration) {
	a := f.answer(wf)
	if a == nil {
		return f.status, f.errType, 0
	}
	status = a["status"].(int)
	if status == http.StatusTooManyRequests { // aimock sends Retry-After on every 429, 1 s by default
		retryAfter = time.Second
		if s, ok := a["retryAfter"].(int); ok {
			retryAfter = time.Duration(s) * time.Second
		}
	}
	return status, a["error"].(obj)["type"].(string), retryAfter
}

func TestAimock_ErrorsAreTypedInBothWireFormats(t *testing.T) {
	var fs []fixture
	for _, f := range aimockFailures {
		fs = append(fs, f.fixtures()...)
	}
	a := startAimock(t, fs...)
	for _, wf := range wireFormats {
		for _, f := range aimockFailures {
			t.Run(wf.name+"/"+f.name, func(t *testing.T) {
				key := aimockKey
				if f.key != "" {
					key = f.key
				}
				p := wf.build(t, a, key, &http.Client{Transport: a.transport})
				_, err := p.Chat(t.Context(), ask("fail: "+f.name))
				f.check(t, wf, key, err)
				if f.chaos != nil {
					return // a broken 200 stream is a failure of Recv, not of ChatStream
				}
				st, err := p.ChatStream(t.Context(), ask("fail: "+f.name))
				if err == nil {
					st.Close()
					t.Fatal("ChatStream returned a stream for an error status")
				}
				f.check(t, wf, key, err)
			})
		}
	}
}

func (f aimockFailure) check(t *testing.T, wf wireFormat, key string, err error) {
	t.Helper()
	var pe *providers.Error
	if !errors.As(err, &pe) {
		t.Fatalf("got %T %v, want *providers.Error", err, err)
	}
	status, errType, retryAfter := f.want(wf)
	if pe.Kind != f.kind || pe.StatusCode != status || pe.Provider != wf.name {
		t.Errorf("kind %s status %d provider %q (%v), want %s %d %q", pe.Kind, pe.StatusCode, pe.Provider, err,
			f.kind, status, wf.name)
	}
	if pe.Type != errType || pe.RetryAfter != retryAfter {
		t.Errorf("type %q retry after %v, want %q %v", pe.Type, pe.RetryAfter, errType, retryAfter)
	}
	if pe.StatusCode != 0 && !strings.HasPrefix(pe.RequestID, "req-") {
		t.Errorf("request id %q", pe.RequestID)
	}
	if strings.Contains(fmt.Sprintf("%v %+v", err, pe), key) {
		t.Error("the API key leaked into the error")
	}
}

// aimock breaks the connection after a few chunks: the stream fails with the text it
// delivered, never with success. A broken connection is KindUnavailable, as with the mocks'
// CutStream; KindStreamTruncated is for a body that ends cleanly without its terminal event.
func TestAimock_StreamBrokenMidwayFailsWithThePartialText(t *testing.T) {
	const text = "This answer is cut off after a few chunks and never finishes."
	// A Responses stream opens with four events before its first word: it is cut later.
	a := startAimock(t, fixture{Match: obj{"userMessage": "cut me off", "model": aimockResponsesModel}, Response: obj{"content": text},
		ChunkSize: aimockChunk, Latency: 5, TruncateAfterChunks: 7},
		fixture{Match: obj{"userMessage": "cut me off"}, Response: obj{"content": text},
			ChunkSize: aimockChunk, Latency: 5, TruncateAfterChunks: 5})
	for _, wf := range wireFormats {
		t.Run(wf.name, func(t *testing.T) {
			st, err := a.provider(t, wf).ChatStream(t.Context(), ask("cut me off"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := readStream(st)
			checkBroken(t, err, got.text, text)

			c := aimockClient(t, a, wf)
			cst, err := c.ChatStream(t.Context(), ask("cut me off"))
			if err != nil {
				t.Fatal(err) // the first content arrived: the client hands the stream over
			}
			defer cst.Close()
			for _, err = range cst.Deltas() { // the last error is the failure
			}
			checkBroken(t, err, cst.Text(), text)
		})
	}
}

func checkBroken(t *testing.T, err error, read, full string) {
	t.Helper()
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Kind != providers.KindUnavailable || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("got %v, want an unavailable error wrapping io.ErrUnexpectedEOF", err)
	}
	if pe.Partial != read || read == "" || read == full || !strings.HasPrefix(full, read) {
		t.Errorf("partial %q after reading %q, want a proper prefix of %q", pe.Partial, read, full)
	}
}

// aimockPolicy retries once, at once, and never opens the circuit, so that each test can
// count the exchanges aimock saw.
func aimockPolicy() resilience.Options {
	o := resilience.DefaultOptions()
	o.RetryCount = 1
	o.RetryBaseDelaySeconds = 0.001
	o.RetryUseJitter = false
	o.RetryBudgetPercent = 0
	o.CircuitBreakerThreshold = 1000
	o.TimeoutSeconds = 10
	o.StreamIdleTimeoutSeconds = 10
	return o
}

// aimockClient is a steady client over the given wire formats, the first one primary and the
// others its fallback chain.
func aimockClient(t *testing.T, a *aimock, chain ...wireFormat) *client.Client {
	t.Helper()
	opts := []client.Option{client.WithBaseTransport(a.transport)}
	var names []string
	for _, wf := range chain {
		opts = append(opts, client.WithProvider(wf.name, aimockPolicy(), func(hc *http.Client) (providers.Provider, error) {
			return wf.build(t, a, aimockKey, hc), nil
		}))
		names = append(names, wf.name)
	}
	c, err := client.New(append(opts, client.WithFallback(names...))...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAimock_ClientRetriesA503ThroughThePipeline(t *testing.T) {
	var fs []fixture
	for _, wf := range wireFormats {
		m := obj{"userMessage": "flaky", "model": wf.model}
		fs = append(fs,
			fixture{Match: withField(maps.Clone(m), "sequenceIndex", 0), Response: aimockError(503, "api_error", "Service unavailable", nil)},
			fixture{Match: withField(maps.Clone(m), "sequenceIndex", 1), Response: obj{"content": "Second time lucky."}})
	}
	a := startAimock(t, fs...)
	for _, wf := range wireFormats {
		t.Run(wf.name, func(t *testing.T) {
			resp, err := aimockClient(t, a, wf).Chat(t.Context(), ask("flaky"))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Provider != wf.name || resp.Message.Content != "Second time lucky." {
				t.Errorf("response %+v", resp)
			}
			if got := statuses(a.journal(t, pathOf(wf))); !slices.Equal(got, []int{503, 200}) {
				t.Errorf("aimock answered %v, want [503 200]", got)
			}
		})
	}
}

func TestAimock_ClientFallsBackFromOpenAIToAnthropic(t *testing.T) {
	openai, anthropic := wireFormats[0], wireFormats[1]
	a := startAimock(t,
		fixture{Match: obj{"userMessage": "fall back", "model": openai.model}, Response: aimockError(529, "overloaded_error", "Overloaded", nil)},
		fixture{Match: obj{"userMessage": "fall back", "model": anthropic.model}, Response: obj{"content": "Served by the second provider."}})
	c := aimockClient(t, a, openai, anthropic)

	resp, err := c.Chat(t.Context(), ask("fall back"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Provider != "anthropic" || resp.Model != anthropic.model || resp.Message.Content != "Served by the second provider." {
		t.Errorf("response %+v", resp)
	}

	st, err := c.ChatStream(t.Context(), ask("fall back"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var done providers.Delta
	for d, err := range st.Deltas() {
		if err != nil {
			t.Fatal(err)
		}
		done = d
	}
	if st.Provider() != "anthropic" || st.Text() != "Served by the second provider." || !done.Done || done.FinishReason != providers.FinishStop {
		t.Errorf("stream from %q read %q, last delta %+v", st.Provider(), st.Text(), done)
	}

	// Each call tried OpenAI twice (one retry), then Anthropic once.
	if got := statuses(a.journal(t, pathOf(openai))); !slices.Equal(got, []int{529, 529, 529, 529}) {
		t.Errorf("OpenAI answered %v, want four 529s", got)
	}
	if got := statuses(a.journal(t, pathOf(anthropic))); !slices.Equal(got, []int{200, 200}) {
		t.Errorf("Anthropic answered %v, want two 200s", got)
	}
}

// aimock sends Retry-After on every 429, an exhausted quota included: the pipeline must still
// see from the body that waiting will not help, and give up at once.
func TestAimock_ClientDoesNotRetryAnExhaustedQuota(t *testing.T) {
	openai, anthropic := wireFormats[0], wireFormats[1]
	quota := aimockFailures[1]
	if quota.kind != providers.KindQuotaExhausted {
		t.Fatalf("aimockFailures[1] is %q", quota.name)
	}
	a := startAimock(t,
		fixture{Match: obj{"userMessage": "no credit", "model": openai.model}, Response: quota.response},
		fixture{Match: obj{"userMessage": "no credit", "model": anthropic.model}, Response: quota.anthropic},
		fixture{Match: obj{"userMessage": "no credit", "model": wireFormats[2].model}, Response: quota.response})
	for _, wf := range wireFormats {
		t.Run(wf.name, func(t *testing.T) {
			_, err := aimockClient(t, a, wf).Chat(t.Context(), ask("no credit"))
			var pe *providers.Error
			if !errors.As(err, &pe) || pe.Kind != providers.KindQuotaExhausted {
				t.Fatalf("got %v, want an exhausted quota", err)
			}
			if pe.Attempts != 1 {
				t.Errorf("%d attempts, want 1", pe.Attempts)
			}
			if n := len(a.journal(t, pathOf(wf))); n != 1 {
				t.Errorf("aimock saw %d requests, want 1", n)
			}
		})
	}
}

func pathOf(wf wireFormat) string {
	switch wf.name {
	case "anthropic":
		return "/v1/messages"
	case "responses":
		return "/v1/responses"
	}
	return "/v1/chat/completions"
}

func statuses(entries []journalEntry) []int {
	var s []int
	for _, e := range entries {
		s = append(s, e.Response.Status)
	}
	return s
}
