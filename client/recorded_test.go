package client_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// The recorded corpus (providers/testdata/recorded) holds answers written in the shapes the
// real OpenAI, Azure OpenAI and Anthropic APIs send — status, headers, JSON or SSE body — each
// beside what it says (its .want.json). The interop module reads the same files with the
// official SDKs, so that the expectations are checked against an independent reader; here
// each is replayed over loopback through client.Client, and every field of its expectation
// must come out of the client as the recording says it.

// corpusDir is where the recorded answers are, relative to this package.
const corpusDir = "../providers/testdata/recorded"

// recording is one recorded answer and its expectation.
type recording struct {
	name   string // wire/file, without the extension
	status int
	header http.Header
	body   []byte
	want   expectation
}

// stream reports whether the answer is an event stream (replayed through ChatStream).
func (r *recording) stream() bool {
	return strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream")
}

// expectation is what a recorded answer says, in the neutral vocabulary.
type expectation struct {
	Wire           string         `json:"wire"`    // chat, responses, messages
	Dialect        string         `json:"dialect"` // openai, azure, compatible ("" for messages)
	Model          string         `json:"model"`   // the model asked for
	ServedModel    string         `json:"served_model"`
	Text           string         `json:"text"`
	Reasoning      string         `json:"reasoning"`
	Thinking       []wantThinking `json:"thinking"`
	ToolCalls      []wantToolCall `json:"tool_calls"`
	ProviderBlocks []string       `json:"provider_blocks"`
	Finish         string         `json:"finish"`
	Usage          *wantUsage     `json:"usage"`
	Error          *wantError     `json:"error"`
	RetryAfter     string         `json:"retry_after"`
	RequestID      string         `json:"request_id"`
	RateLimit      *wantRateLimit `json:"rate_limit"`
}

type wantThinking struct {
	Text      string `json:"text"`
	Signature string `json:"signature"`
	Redacted  string `json:"redacted"`
}

type wantToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wantUsage struct {
	InputTokens           int `json:"input_tokens"`
	OutputTokens          int `json:"output_tokens"`
	CachedInputTokens     int `json:"cached_input_tokens"`
	CacheWriteInputTokens int `json:"cache_write_input_tokens"`
	ReasoningTokens       int `json:"reasoning_tokens"`
}

func (u *wantUsage) neutral() providers.Usage {
	return providers.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedInputTokens: u.CachedInputTokens,
		CacheWriteInputTokens: u.CacheWriteInputTokens, ReasoningTokens: u.ReasoningTokens}
}

type wantError struct {
	Kind    string `json:"kind"`
	Status  int    `json:"status"`
	Type    string `json:"type"`
	Code    string `json:"code"`
	Message string `json:"message"` // "" when not checked (a gateway's page, steady's own words)
}

type wantRateLimit struct {
	Requests     *wantBudget `json:"requests"`
	Tokens       *wantBudget `json:"tokens"`
	InputTokens  *wantBudget `json:"input_tokens"`
	OutputTokens *wantBudget `json:"output_tokens"`
}

// wantBudget is one budget as its headers state it; Reset is the header's value: an RFC 3339
// time (Anthropic) or a duration from the answer's arrival (OpenAI), "" when none was sent.
type wantBudget struct {
	Limit     int    `json:"limit"`
	Remaining int    `json:"remaining"`
	Reset     string `json:"reset"`
}

// loadRecordings reads every recorded answer of the corpus.
func loadRecordings(t *testing.T) []*recording {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(corpusDir, "*", "*.http"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recordings under %s: %v", corpusDir, err)
	}
	var out []*recording
	for _, f := range files {
		r, err := readRecording(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, r)
	}
	return out
}

// readRecording reads file (an HTTP response: status line, headers, a blank line, the body)
// and the expectation beside it.
func readRecording(file string) (*recording, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(data)))
	line, err := tp.ReadLine()
	if err != nil {
		return nil, err
	}
	proto, rest, _ := strings.Cut(line, " ")
	code, _, _ := strings.Cut(rest, " ")
	status, err := strconv.Atoi(code)
	if proto != "HTTP/1.1" || err != nil {
		return nil, errors.New("bad status line " + strconv.Quote(line))
	}
	mh, err := tp.ReadMIMEHeader()
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(tp.R)
	if err != nil {
		return nil, err
	}
	name := strings.TrimSuffix(file, ".http")
	wf, err := os.ReadFile(name + ".want.json")
	if err != nil {
		return nil, err
	}
	r := &recording{name: filepath.Base(filepath.Dir(file)) + "/" + filepath.Base(name), status: status,
		header: http.Header(mh), body: body}
	dec := json.NewDecoder(bytes.NewReader(wf))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r.want); err != nil {
		return nil, errors.New(name + ".want.json: " + err.Error())
	}
	return r, nil
}

// replayServer answers every request with r, after checking that it went to the endpoint of
// r's wire and asked for a stream exactly when r is one.
func replayServer(t *testing.T, r *recording) *httptest.Server {
	t.Helper()
	path := map[string]string{"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}[r.want.Wire]
	if r.want.Dialect == "azure" {
		path = "/openai/deployments/" + r.want.Model + "/chat/completions"
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body struct {
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(req.Body).Decode(&body)
		if req.Method != http.MethodPost || req.URL.Path != path || body.Stream != r.stream() {
			t.Errorf("%s: the request went to %s %s (stream %t), want POST %s (stream %t)", r.name, req.Method, req.URL.Path,
				body.Stream, path, r.stream())
		}
		for k, v := range r.header {
			w.Header()[k] = v
		}
		w.WriteHeader(r.status)
		_, _ = w.Write(r.body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// replayClient is a client with one provider of r's wire against srv: no retries, so that
// the recording is read once, as it came.
func replayClient(t *testing.T, r *recording, srv string, tel client.Telemetry, extra ...client.Option) *client.Client {
	t.Helper()
	o := resilience.DefaultOptions()
	o.RetryCount = 0
	o.TimeoutSeconds, o.StreamIdleTimeoutSeconds = 10, 10
	const key = "sk-recorded-0000"
	build := func(hc *http.Client) (providers.Provider, error) {
		switch {
		case r.want.Wire == "messages":
			return anthropic.New(anthropic.Config{Name: "p", BaseURL: srv, APIKey: key, HTTPClient: hc, Model: r.want.Model})
		case r.want.Dialect == "azure":
			return openai.New(openai.Config{Name: "p", Dialect: openai.Azure, BaseURL: srv, APIKey: key, HTTPClient: hc, Model: r.want.Model})
		}
		cfg := openai.Config{Name: "p", Dialect: openai.OpenAI, BaseURL: srv + "/v1", APIKey: key, HTTPClient: hc, Model: r.want.Model}
		if r.want.Dialect == "compatible" {
			cfg.Dialect = openai.Compatible
		}
		if r.want.Wire == "responses" {
			cfg.API = openai.Responses
		}
		return openai.New(cfg)
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	opts := append([]client.Option{client.WithBaseTransport(tr), client.WithProvider("p", o, build), client.WithTelemetry(tel)}, extra...)
	c, err := client.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// answer is what the client made of a recording: the neutral answer's fields, or its error.
type answer struct {
	text, reasoning string
	thinking        []providers.ThinkingBlock
	calls           []providers.ToolCall
	blocks          []providers.ProviderBlock
	finish          providers.FinishReason
	usage           providers.Usage
	model           string
	requestID       string // "" where the client gives none (a stream's answer)
	rl              *providers.RateLimit
	err             *providers.Error
}

func TestRecorded_EveryAnswerReadsAsItSays(t *testing.T) {
	for _, r := range loadRecordings(t) {
		t.Run(r.name, func(t *testing.T) {
			tel := &fakeTelemetry{}
			srv := replayServer(t, r)
			c := replayClient(t, r, srv.URL, tel)
			var got answer
			if r.stream() {
				got = readStream(t, c, r)
			} else {
				got = readChat(t, c, r)
			}
			checkAnswer(t, r, got)
			if r.want.Error == nil {
				// Telemetry names the model that served, as the server named it.
				tel.mu.Lock()
				defer tel.mu.Unlock()
				if len(tel.tries) != 1 || tel.tries[0].ResponseModel != r.want.ServedModel {
					t.Errorf("telemetry's tries %+v, want one whose ResponseModel is %q", tel.tries, r.want.ServedModel)
				}
			}
		})
	}
}

// A stream is priced as a whole answer is: by the model asked for, else by the model that
// served as the server named it, when only that one has a price.
func TestRecorded_AStreamIsPricedByTheModelThatServedAsChatIs(t *testing.T) {
	prices, err := cost.NewPrices("USD", []cost.Entry{{Provider: "*", Model: "gpt-4o-2024-08-06",
		Price: cost.Price{Input: nano(t, "2.5"), Output: nano(t, "10")}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"chat/json_plain", "chat/sse_plain"} {
		r, err := readRecording(filepath.Join(corpusDir, name+".http"))
		if err != nil {
			t.Fatal(err)
		}
		c := replayClient(t, r, replayServer(t, r).URL, &fakeTelemetry{}, client.WithPrices(prices))
		var got providers.CallCost
		if r.stream() {
			st, err := c.ChatStream(context.Background(), request(r))
			if err != nil {
				t.Fatal(err)
			}
			for _, err := range st.Deltas() {
				if err != nil {
					t.Fatal(err)
				}
			}
			got = st.Cost()
			_ = st.Close()
		} else {
			resp, err := c.Chat(context.Background(), request(r))
			if err != nil {
				t.Fatal(err)
			}
			got = resp.Cost
		}
		u := r.want.Usage
		want := providers.CallCost{Currency: "USD", Serving: providers.Money(u.InputTokens*2500 + u.OutputTokens*10000)}
		if got != want {
			t.Errorf("%s: cost %+v, want %+v", name, got, want)
		}
	}
}

func request(r *recording) *providers.ChatRequest {
	return &providers.ChatRequest{Model: r.want.Model, MaxTokens: 256,
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "Tell me something."}}}
}

// readChat reads r through Chat.
func readChat(t *testing.T, c *client.Client, r *recording) answer {
	t.Helper()
	resp, err := c.Chat(context.Background(), request(r))
	if err != nil {
		return answer{err: asProviderError(t, err)}
	}
	return answer{text: resp.Message.Content, reasoning: resp.Reasoning, thinking: resp.Message.Thinking,
		calls: resp.Message.ToolCalls, blocks: resp.Message.ProviderBlocks, finish: resp.FinishReason, usage: resp.Usage,
		model: resp.Model, requestID: resp.RequestID, rl: resp.RateLimit}
}

// readStream reads r through ChatStream, to its end. The rate-limit snapshot must ride on the
// first delta the caller receives, and Stream.RateLimit must hold it.
func readStream(t *testing.T, c *client.Client, r *recording) answer {
	t.Helper()
	st, err := c.ChatStream(context.Background(), request(r))
	if err != nil {
		return answer{err: asProviderError(t, err)}
	}
	defer st.Close()
	var got answer
	var args []strings.Builder
	first := true
	for {
		d, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			got.err = asProviderError(t, err)
			got.text = st.Text()
			break
		}
		if first && r.want.RateLimit != nil && d.RateLimit == nil {
			t.Errorf("the first delta carries no rate-limit snapshot")
		}
		first = false
		got.text += d.Text
		got.reasoning += d.Reasoning
		for _, tc := range d.ToolCalls {
			for len(got.calls) <= tc.Index {
				got.calls = append(got.calls, providers.ToolCall{})
				args = append(args, strings.Builder{})
			}
			if tc.ID != "" {
				got.calls[tc.Index].ID = tc.ID
			}
			if tc.Name != "" {
				got.calls[tc.Index].Name = tc.Name
			}
			args[tc.Index].WriteString(tc.Arguments)
		}
		if d.Done {
			got.finish, got.usage, got.thinking, got.blocks = d.FinishReason, d.Usage, d.Thinking, d.ProviderBlocks
			if d.Model != r.want.ServedModel {
				t.Errorf("the Done delta names the model %q, want %q", d.Model, r.want.ServedModel)
			}
		}
	}
	for i := range got.calls {
		got.calls[i].Arguments = args[i].String()
	}
	if got.err == nil {
		got.model, got.rl = st.Model(), st.RateLimit()
		if got.text != st.Text() {
			t.Errorf("Stream.Text() = %q, the deltas' text %q", st.Text(), got.text)
		}
	} else if st.RateLimit() == nil && r.want.RateLimit != nil && got.text != "" {
		t.Errorf("a stream that failed after content: Stream.RateLimit() is nil")
	}
	return got
}

// checkAnswer compares every field of r's expectation with what the client read.
func checkAnswer(t *testing.T, r *recording, got answer) {
	t.Helper()
	w := r.want
	rl := got.rl
	if w.Error != nil {
		e := got.err
		if e == nil {
			t.Fatalf("the client read an answer, want the error %+v", *w.Error)
		}
		if string(e.Kind) != w.Error.Kind || e.StatusCode != w.Error.Status || e.Type != w.Error.Type || e.Code != w.Error.Code {
			t.Errorf("error kind %q, status %d, type %q, code %q; want %+v", e.Kind, e.StatusCode, e.Type, e.Code, *w.Error)
		}
		if w.Error.Message != "" && e.Message != w.Error.Message {
			t.Errorf("error message %q, want %q", e.Message, w.Error.Message)
		}
		if e.Partial != w.Text || (r.stream() && got.text != w.Text) {
			t.Errorf("the error's Partial %q (the stream's text %q), want %q", e.Partial, got.text, w.Text)
		}
		var ra time.Duration
		if w.RetryAfter != "" {
			ra, _ = time.ParseDuration(w.RetryAfter)
		}
		if e.RetryAfter != ra {
			t.Errorf("error RetryAfter %v, want %v", e.RetryAfter, ra)
		}
		switch {
		case w.Usage == nil && e.Usage != nil:
			t.Errorf("error Usage %+v, want none", *e.Usage)
		case w.Usage != nil && (e.Usage == nil || *e.Usage != w.Usage.neutral()):
			t.Errorf("error Usage %+v, want %+v", e.Usage, w.Usage.neutral())
		}
		if e.RequestID != w.RequestID {
			t.Errorf("error RequestID %q, want %q", e.RequestID, w.RequestID)
		}
		rl = e.RateLimit
	} else {
		if got.err != nil {
			t.Fatalf("the client failed: %v (%#v)", got.err, got.err)
		}
		if got.text != w.Text || got.reasoning != w.Reasoning {
			t.Errorf("text %q, reasoning %q; want %q, %q", got.text, got.reasoning, w.Text, w.Reasoning)
		}
		if string(got.finish) != w.Finish {
			t.Errorf("finish %q, want %q", got.finish, w.Finish)
		}
		var u providers.Usage
		if w.Usage != nil {
			u = w.Usage.neutral()
		}
		if got.usage != u {
			t.Errorf("usage %+v, want %+v", got.usage, u)
		}
		if got.model != w.ServedModel {
			t.Errorf("model %q, want the served model %q", got.model, w.ServedModel)
		}
		if !r.stream() && got.requestID != w.RequestID {
			t.Errorf("RequestID %q, want %q", got.requestID, w.RequestID)
		}
		checkCalls(t, got.calls, w.ToolCalls)
		checkThinking(t, got.thinking, w.Thinking)
		var types []string
		for _, b := range got.blocks {
			types = append(types, b.Type)
		}
		if strings.Join(types, ",") != strings.Join(w.ProviderBlocks, ",") {
			t.Errorf("provider blocks %v, want %v", types, w.ProviderBlocks)
		}
	}
	checkRateLimit(t, rl, w.RateLimit)
}

func checkCalls(t *testing.T, got []providers.ToolCall, want []wantToolCall) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = got[i].ID == want[i].ID && got[i].Name == want[i].Name && got[i].Arguments == want[i].Arguments
	}
	if !ok {
		t.Errorf("tool calls %+v, want %+v", got, want)
	}
}

func checkThinking(t *testing.T, got []providers.ThinkingBlock, want []wantThinking) {
	t.Helper()
	// A wire that gives reasoning as text only (OpenAI Responses' summaries) is checked by its
	// text; the blocks are checked where the expectation names them.
	if want == nil {
		return
	}
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = got[i].Text == want[i].Text && got[i].Signature == want[i].Signature && got[i].Redacted == want[i].Redacted
	}
	if !ok {
		t.Errorf("thinking %+v, want %+v", got, want)
	}
}

// checkRateLimit compares a snapshot with what the headers stated, budget by budget.
func checkRateLimit(t *testing.T, got *providers.RateLimit, want *wantRateLimit) {
	t.Helper()
	if want == nil {
		if got != nil {
			t.Errorf("rate limit %+v, want none", *got)
		}
		return
	}
	if got == nil {
		t.Errorf("no rate-limit snapshot, want %+v", *want)
		return
	}
	for _, b := range []struct {
		name string
		got  providers.RateBudget
		want *wantBudget
	}{{"requests", got.Requests, want.Requests}, {"tokens", got.Tokens, want.Tokens},
		{"input tokens", got.InputTokens, want.InputTokens}, {"output tokens", got.OutputTokens, want.OutputTokens}} {
		w := b.want
		if w == nil {
			w = &wantBudget{}
		}
		if b.got.Limit != w.Limit || b.got.Remaining != w.Remaining || !resetIs(b.got.Reset, got.At, w.Reset) {
			t.Errorf("rate limit of %s: %d of %d, reset %v (%v after the answer); want %+v", b.name, b.got.Remaining,
				b.got.Limit, b.got.Reset, b.got.Reset.Sub(got.At), *w)
		}
	}
}

// resetIs reports whether reset, of a snapshot taken at at, is what the header value want says.
func resetIs(reset, at time.Time, want string) bool {
	if want == "" {
		return reset.IsZero()
	}
	if ts, err := time.Parse(time.RFC3339, want); err == nil {
		return reset.Equal(ts)
	}
	d, err := time.ParseDuration(want)
	return err == nil && reset.Sub(at) == d
}
