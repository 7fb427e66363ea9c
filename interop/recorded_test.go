package interop

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
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
)

// The corpus of recorded answers (providers/testdata/recorded) read by the official SDKs: each
// file is replayed over loopback to openai-go or anthropic-sdk-go, and what the SDK reads —
// text, tool calls, usage, finish, model, the error's status, type, code and message — must
// be what the file's expectation says, which steady's own replay test (client) holds steady's
// client to. The SDK is the independent reader that proves the expectations right. Where an
// SDK exposes no field (rate-limit headers, retry hints, request IDs) the headers it received
// are compared instead.

// corpusDir is the corpus, read by relative path (interop replaces the root module with ../).
const corpusDir = "../providers/testdata/recorded"

// recorded is one recorded answer and its expectation.
type recorded struct {
	name   string
	status int
	header http.Header
	body   []byte
	want   recordedWant
}

func (r *recorded) stream() bool {
	return strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream")
}

// recordedWant is the expectation of a recorded answer (the .want.json beside it).
type recordedWant struct {
	Wire        string `json:"wire"`
	Dialect     string `json:"dialect"`
	Model       string `json:"model"`
	ServedModel string `json:"served_model"`
	Text        string `json:"text"`
	Reasoning   string `json:"reasoning"`
	Thinking    []struct {
		Text      string `json:"text"`
		Signature string `json:"signature"`
		Redacted  string `json:"redacted"`
	} `json:"thinking"`
	ToolCalls      []recordedCall `json:"tool_calls"`
	ProviderBlocks []string       `json:"provider_blocks"`
	Finish         string         `json:"finish"`
	Usage          *sdkUsage      `json:"usage"`
	Error          *struct {
		Kind    string `json:"kind"`
		Status  int    `json:"status"`
		Type    string `json:"type"`
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	RetryAfter string                     `json:"retry_after"`
	RequestID  string                     `json:"request_id"`
	RateLimit  map[string]*recordedBudget `json:"rate_limit"`
}

type recordedBudget struct {
	Limit     int    `json:"limit"`
	Remaining int    `json:"remaining"`
	Reset     string `json:"reset"`
}

type recordedCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// sdkUsage is usage in the neutral sense the expectations use: input counts the whole prompt.
type sdkUsage struct {
	InputTokens           int `json:"input_tokens"`
	OutputTokens          int `json:"output_tokens"`
	CachedInputTokens     int `json:"cached_input_tokens"`
	CacheWriteInputTokens int `json:"cache_write_input_tokens"`
	ReasoningTokens       int `json:"reasoning_tokens"`
}

// sdkRead is what an SDK read of a recorded answer.
type sdkRead struct {
	text, reasoning string
	thinking        [][3]string // text, signature, redacted
	calls           []recordedCall
	blocks          []string // content block types the neutral message does not model
	finish          string   // mapped to the neutral vocabulary from the SDK's own value
	usage           *sdkUsage
	model           string
	refusal         string // the refusal the SDK read (OpenAI), or stop_details' explanation
	refused         bool
	category        string // Anthropic's stop_details.category
	// The failure the SDK reported, or the error an answer with status 200 carried (an error
	// event, an error envelope, a failed response): status, type, code, message.
	failed                      bool
	errStatus                   int
	errType, errCode, errMesage string
	header                      http.Header // what the SDK received
}

func loadRecorded(t *testing.T) []*recorded {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(corpusDir, "*", "*.http"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recordings under %s: %v", corpusDir, err)
	}
	var out []*recorded
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(data)))
		line, err := tp.ReadLine()
		if err != nil {
			t.Fatal(err)
		}
		fields := strings.Fields(line)
		if len(fields) < 2 || fields[0] != "HTTP/1.1" {
			t.Fatalf("%s: bad status line %q", f, line)
		}
		status, err := strconv.Atoi(fields[1])
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		mh, err := tp.ReadMIMEHeader()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		body, _ := io.ReadAll(tp.R)
		base := strings.TrimSuffix(f, ".http")
		r := &recorded{name: filepath.Base(filepath.Dir(f)) + "/" + filepath.Base(base), status: status, header: http.Header(mh), body: body}
		wf, err := os.ReadFile(base + ".want.json")
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(wf))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r.want); err != nil {
			t.Fatalf("%s.want.json: %v", base, err)
		}
		out = append(out, r)
	}
	return out
}

func TestRecorded_TheOfficialSDKsReadWhatTheExpectationsSay(t *testing.T) {
	for _, r := range loadRecorded(t) {
		t.Run(r.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				for k, v := range r.header {
					w.Header()[k] = v
				}
				w.WriteHeader(r.status)
				_, _ = w.Write(r.body)
			}))
			defer srv.Close()
			var got sdkRead
			switch r.want.Wire {
			case "chat":
				got = readChatSDK(t, r, srv)
			case "responses":
				got = readResponsesSDK(t, r, srv)
			case "messages":
				got = readMessagesSDK(t, r, srv)
			default:
				t.Fatalf("unknown wire %q", r.want.Wire)
			}
			checkSDK(t, r, got)
		})
	}
}

// openAIClient is openai-go against srv for r's dialect, without retries.
func openAIClient(r *recorded, srv *httptest.Server) openai.Client {
	if r.want.Dialect == "azure" {
		return openai.NewClient(azure.WithEndpoint(srv.URL, "2024-10-21"), azure.WithAPIKey("azure-key"),
			azure.WithUnsafeAllowHTTP(), option.WithHTTPClient(srv.Client()), option.WithMaxRetries(0))
	}
	return openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("sk-test"),
		option.WithHTTPClient(srv.Client()), option.WithMaxRetries(0))
}

var chatFinish = map[string]string{"stop": "stop", "length": "length", "tool_calls": "tool_calls", "content_filter": "content_filter"}

// readChatSDK reads r as openai-go reads a chat completion, or a stream of its chunks.
func readChatSDK(t *testing.T, r *recorded, srv *httptest.Server) sdkRead {
	t.Helper()
	c := openAIClient(r, srv)
	var got sdkRead
	var resp *http.Response
	params := openai.ChatCompletionNewParams{Model: r.want.Model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Tell me something.")}}
	if !r.stream() {
		cc, err := c.Chat.Completions.New(context.Background(), params, option.WithResponseInto(&resp))
		if err != nil {
			return apiFailure(t, err, got)
		}
		got.header, got.model = resp.Header, cc.Model
		got.usage = &sdkUsage{InputTokens: int(cc.Usage.PromptTokens), OutputTokens: int(cc.Usage.CompletionTokens),
			CachedInputTokens: int(cc.Usage.PromptTokensDetails.CachedTokens), ReasoningTokens: int(cc.Usage.CompletionTokensDetails.ReasoningTokens)}
		if len(cc.Choices) == 0 {
			// An error envelope with 200: openai-go reads no choices; what the body carried
			// instead is its "error".
			envelopeFailure(&got, []byte(cc.RawJSON()))
			got.usage = nil
			return got
		}
		m := cc.Choices[0].Message
		got.text, got.refusal, got.refused = m.Content, m.Refusal, m.Refusal != ""
		got.finish = chatFinish[cc.Choices[0].FinishReason]
		for _, tc := range m.ToolCalls {
			got.calls = append(got.calls, recordedCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		return got
	}
	st := c.Chat.Completions.NewStreaming(context.Background(), params, option.WithResponseInto(&resp))
	defer st.Close()
	var refusal strings.Builder
	for st.Next() {
		ch := st.Current()
		if got.model == "" {
			got.model = ch.Model
		}
		if ch.JSON.Usage.Valid() && ch.Usage.TotalTokens > 0 {
			got.usage = &sdkUsage{InputTokens: int(ch.Usage.PromptTokens), OutputTokens: int(ch.Usage.CompletionTokens),
				CachedInputTokens: int(ch.Usage.PromptTokensDetails.CachedTokens), ReasoningTokens: int(ch.Usage.CompletionTokensDetails.ReasoningTokens)}
		}
		for _, choice := range ch.Choices {
			got.text += choice.Delta.Content
			refusal.WriteString(choice.Delta.Refusal)
			if choice.FinishReason != "" {
				got.finish = chatFinish[choice.FinishReason]
			}
			for _, tc := range choice.Delta.ToolCalls {
				for len(got.calls) <= int(tc.Index) {
					got.calls = append(got.calls, recordedCall{})
				}
				call := &got.calls[tc.Index]
				if tc.ID != "" {
					call.ID = tc.ID
				}
				if tc.Function.Name != "" {
					call.Name = tc.Function.Name
				}
				call.Arguments += tc.Function.Arguments
			}
		}
	}
	if resp != nil {
		got.header = resp.Header
	}
	got.refusal, got.refused = refusal.String(), refusal.Len() > 0
	if err := st.Err(); err != nil {
		var se *ssestream.StreamError
		if !errors.As(err, &se) {
			t.Fatalf("openai-go failed reading the stream: %v", err)
		}
		envelopeFailure(&got, se.Event.Data)
		got.errStatus = resp.StatusCode
	}
	return got
}

// envelopeFailure notes, as got's failure, the OpenAI error envelope ({"error":{…}}) in data.
func envelopeFailure(got *sdkRead, data []byte) {
	var env struct {
		Error struct {
			Type    string `json:"type"`
			Code    any    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &env)
	got.failed, got.errStatus = true, http.StatusOK
	got.errType, got.errMesage = env.Error.Type, env.Error.Message
	if env.Error.Code != nil {
		got.errCode = strings.Trim(string(mustJSON(env.Error.Code)), `"`)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// apiFailure notes the error status openai-go returned as got's failure.
func apiFailure(t *testing.T, err error, got sdkRead) sdkRead {
	t.Helper()
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("openai-go failed without an API error: %v", err)
	}
	got.failed, got.errStatus, got.header = true, apiErr.StatusCode, apiErr.Response.Header
	got.errType, got.errCode, got.errMesage = apiErr.Type, apiErr.Code, apiErr.Message
	return got
}

// readResponsesSDK reads r as openai-go reads a response, or the events of a streamed one.
func readResponsesSDK(t *testing.T, r *recorded, srv *httptest.Server) sdkRead {
	t.Helper()
	c := openAIClient(r, srv)
	var got sdkRead
	var resp *http.Response
	params := responses.ResponseNewParams{Model: r.want.Model, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Tell me something.")}}
	if !r.stream() {
		rr, err := c.Responses.New(context.Background(), params, option.WithResponseInto(&resp))
		if err != nil {
			return apiFailure(t, err, got)
		}
		got.header = resp.Header
		readResponse(&got, rr)
		got.text, got.reasoning, got.calls = "", "", nil
		for _, it := range rr.Output {
			readOutputItem(&got, it)
		}
		return got
	}
	st := c.Responses.NewStreaming(context.Background(), params, option.WithResponseInto(&resp))
	defer st.Close()
	for st.Next() {
		ev := st.Current()
		switch ev.Type {
		case "response.created":
			got.model = ev.Response.Model
		case "response.output_text.delta":
			got.text += ev.Delta
		case "response.refusal.delta":
			got.refusal += ev.Delta
			got.refused = true
		case "response.reasoning_summary_text.delta":
			got.reasoning += ev.Delta
		case "response.output_item.added":
			if ev.Item.Type == "function_call" {
				fc := ev.Item.AsFunctionCall()
				got.calls = append(got.calls, recordedCall{ID: fc.CallID, Name: fc.Name, Arguments: fc.Arguments})
			}
		case "response.function_call_arguments.delta":
			got.calls[len(got.calls)-1].Arguments += ev.Delta
		case "response.completed", "response.incomplete", "response.failed":
			rr := ev.Response
			readResponse(&got, &rr)
		case "error":
			got.failed, got.errStatus, got.errCode, got.errMesage = true, http.StatusOK, ev.Code, ev.Message
		}
	}
	if err := st.Err(); err != nil {
		t.Fatalf("openai-go failed reading the stream: %v", err)
	}
	got.header = resp.Header
	return got
}

// readResponse notes what a whole response object says: its model, status, usage and error.
func readResponse(got *sdkRead, rr *responses.Response) {
	got.model = rr.Model
	if rr.JSON.Usage.Valid() {
		u := rr.Usage
		got.usage = &sdkUsage{InputTokens: int(u.InputTokens), OutputTokens: int(u.OutputTokens),
			CachedInputTokens: int(u.InputTokensDetails.CachedTokens), ReasoningTokens: int(u.OutputTokensDetails.ReasoningTokens)}
	}
	switch rr.Status {
	case "completed":
		got.finish = "stop"
		for _, it := range rr.Output {
			if it.Type == "function_call" {
				got.finish = "tool_calls"
			}
		}
	case "incomplete":
		if rr.IncompleteDetails.Reason == "max_output_tokens" {
			got.finish = "length"
		}
	case "failed":
		got.failed, got.errStatus, got.errCode, got.errMesage = true, http.StatusOK, string(rr.Error.Code), rr.Error.Message
	}
}

// readOutputItem notes what one output item of a whole response holds.
func readOutputItem(got *sdkRead, it responses.ResponseOutputItemUnion) {
	switch it.Type {
	case "message":
		for _, part := range it.AsMessage().Content {
			switch part.Type {
			case "output_text":
				got.text += part.Text
			case "refusal":
				got.refusal += part.Refusal
				got.refused = true
			}
		}
	case "function_call":
		fc := it.AsFunctionCall()
		got.calls = append(got.calls, recordedCall{ID: fc.CallID, Name: fc.Name, Arguments: fc.Arguments})
	case "reasoning":
		for _, s := range it.AsReasoning().Summary {
			got.reasoning += s.Text
		}
	}
}

var anthropicFinish = map[anthropic.StopReason]string{anthropic.StopReasonEndTurn: "stop", anthropic.StopReasonStopSequence: "stop",
	anthropic.StopReasonMaxTokens: "length", anthropic.StopReasonToolUse: "tool_calls"}

// readMessagesSDK reads r as anthropic-sdk-go reads a message, or accumulates a streamed one.
func readMessagesSDK(t *testing.T, r *recorded, srv *httptest.Server) sdkRead {
	t.Helper()
	c := anthropic.NewClient(anthropicoption.WithBaseURL(srv.URL), anthropicoption.WithAPIKey("sk-ant-test"),
		anthropicoption.WithHTTPClient(srv.Client()), anthropicoption.WithMaxRetries(0))
	var got sdkRead
	var resp *http.Response
	params := anthropic.MessageNewParams{Model: anthropic.Model(r.want.Model), MaxTokens: 256,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Tell me something."))}}
	var msg anthropic.Message
	var streamErr error
	if !r.stream() {
		m, err := c.Messages.New(context.Background(), params, anthropicoption.WithResponseInto(&resp))
		if err != nil {
			var apiErr *anthropic.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("anthropic-sdk-go failed without an API error: %v", err)
			}
			got.failed, got.errStatus, got.header = true, apiErr.StatusCode, apiErr.Response.Header
			got.errType, got.errMesage = string(apiErr.Type()), anthropicMessage([]byte(apiErr.RawJSON()))
			return got
		}
		msg = *m
	} else {
		st := c.Messages.NewStreaming(context.Background(), params, anthropicoption.WithResponseInto(&resp))
		for st.Next() {
			if err := msg.Accumulate(st.Current()); err != nil {
				t.Fatalf("anthropic-sdk-go failed accumulating the stream: %v", err)
			}
		}
		streamErr = st.Err()
		_ = st.Close()
	}
	got.header, got.model = resp.Header, string(msg.Model)
	u := msg.Usage
	got.usage = &sdkUsage{InputTokens: int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens), OutputTokens: int(u.OutputTokens),
		CachedInputTokens: int(u.CacheReadInputTokens), CacheWriteInputTokens: int(u.CacheCreationInputTokens)}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			got.text += b.Text
		case "tool_use":
			got.calls = append(got.calls, recordedCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
		case "thinking":
			got.reasoning += b.Thinking
			got.thinking = append(got.thinking, [3]string{b.Thinking, b.Signature, ""})
		case "redacted_thinking":
			got.thinking = append(got.thinking, [3]string{"", "", b.Data})
		default:
			got.blocks = append(got.blocks, b.Type)
		}
	}
	got.finish = anthropicFinish[msg.StopReason]
	if msg.StopReason == anthropic.StopReasonRefusal {
		got.refused, got.refusal, got.category = true, msg.StopDetails.Explanation, string(msg.StopDetails.Category)
	}
	if streamErr != nil {
		// An error event inside the 200 stream: the SDK's API error, or its own words around
		// the event's data.
		got.failed, got.errStatus = true, http.StatusOK
		var apiErr *anthropic.Error
		data := []byte(strings.TrimPrefix(streamErr.Error(), "received error while streaming: "))
		if errors.As(streamErr, &apiErr) {
			data = []byte(apiErr.RawJSON())
		}
		var env struct {
			Error struct{ Type, Message string } `json:"error"`
		}
		if json.Unmarshal(data, &env) != nil {
			t.Fatalf("anthropic-sdk-go failed reading the stream: %v", streamErr)
		}
		got.errType, got.errMesage = env.Error.Type, env.Error.Message
	}
	return got
}

// anthropicMessage is the error.message of an Anthropic error envelope, "" for a body that is
// none (a gateway's page).
func anthropicMessage(body []byte) string {
	var env struct {
		Error struct{ Message string } `json:"error"`
	}
	_ = json.Unmarshal(body, &env)
	return env.Error.Message
}

// checkSDK compares what the SDK read with r's expectation.
func checkSDK(t *testing.T, r *recorded, got sdkRead) {
	t.Helper()
	w := r.want
	if got.text != w.Text {
		t.Errorf("the SDK read text %q, the expectation says %q", got.text, w.Text)
	}
	if w.Error == nil || w.Error.Status == http.StatusOK {
		if got.model != w.ServedModel {
			t.Errorf("the SDK read model %q, the expectation says it was served by %q", got.model, w.ServedModel)
		}
	}
	switch {
	case w.Error == nil:
		if got.failed || got.refused {
			t.Fatalf("the SDK read a failure or a refusal (%+v), the expectation an answer", got)
		}
		if got.reasoning != w.Reasoning || got.finish != w.Finish {
			t.Errorf("the SDK read reasoning %q, finish %q; the expectation says %q, %q", got.reasoning, got.finish, w.Reasoning, w.Finish)
		}
		checkSDKCalls(t, got.calls, w.ToolCalls)
		if w.Thinking != nil {
			var want [][3]string
			for _, b := range w.Thinking {
				want = append(want, [3]string{b.Text, b.Signature, b.Redacted})
			}
			if !reflect.DeepEqual(got.thinking, want) {
				t.Errorf("the SDK read thinking %q, the expectation says %q", got.thinking, want)
			}
		}
		if strings.Join(got.blocks, ",") != strings.Join(w.ProviderBlocks, ",") {
			t.Errorf("the SDK read blocks %v, the expectation says %v", got.blocks, w.ProviderBlocks)
		}
	case w.Error.Kind == "refused":
		if !got.refused || (w.Error.Message != "" && got.refusal != w.Error.Message) || got.category != w.Error.Code {
			t.Errorf("the SDK read refused %t, %q (category %q); the expectation says %+v", got.refused, got.refusal, got.category, *w.Error)
		}
	case w.Error.Kind == "content_filtered" && w.Error.Status == http.StatusOK:
		if got.finish != "content_filter" {
			t.Errorf("the SDK read finish %q, the expectation says a content filter", got.finish)
		}
	default:
		if !got.failed || got.errStatus != w.Error.Status || got.errType != w.Error.Type || got.errCode != w.Error.Code ||
			(w.Error.Message != "" && got.errMesage != w.Error.Message) {
			t.Errorf("the SDK read failed %t: status %d, type %q, code %q, message %q; the expectation says %+v",
				got.failed, got.errStatus, got.errType, got.errCode, got.errMesage, *w.Error)
		}
	}
	// Usage, where the expectation states it (an error status has none).
	if w.Usage != nil && (got.usage == nil || *got.usage != *w.Usage) {
		t.Errorf("the SDK read usage %+v, the expectation says %+v", got.usage, *w.Usage)
	}
	checkHeaders(t, r, got.header)
}

func checkSDKCalls(t *testing.T, got, want []recordedCall) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = got[i].ID == want[i].ID && got[i].Name == want[i].Name && sameJSON(t, []byte(got[i].Arguments), []byte(want[i].Arguments))
	}
	if !ok {
		t.Errorf("the SDK read tool calls %+v, the expectation says %+v", got, want)
	}
}

// rateHeaders names each budget's headers, limit, remaining and reset, per wire.
func rateHeaders(wire, budget string) (limit, remaining, reset string) {
	if wire == "messages" {
		p := "anthropic-ratelimit-" + strings.ReplaceAll(budget, "_", "-") + "-"
		return p + "limit", p + "remaining", p + "reset"
	}
	return "x-ratelimit-limit-" + budget, "x-ratelimit-remaining-" + budget, "x-ratelimit-reset-" + budget
}

// checkHeaders compares what no SDK exposes as a field — the rate-limit budgets, the request
// ID, the retry hint — with the headers the SDK received.
func checkHeaders(t *testing.T, r *recorded, h http.Header) {
	t.Helper()
	if h == nil {
		t.Fatal("the SDK gave no response headers")
	}
	w := r.want
	for _, budget := range []string{"requests", "tokens", "input_tokens", "output_tokens"} {
		lk, rk, sk := rateHeaders(w.Wire, budget)
		b := w.RateLimit[budget]
		if b == nil {
			if h.Get(lk) != "" || h.Get(rk) != "" {
				t.Errorf("the headers state a %s budget the expectation does not", budget)
			}
			continue
		}
		if h.Get(lk) != strconv.Itoa(b.Limit) || h.Get(rk) != strconv.Itoa(b.Remaining) || h.Get(sk) != b.Reset {
			t.Errorf("the %s budget's headers are %q/%q/%q, the expectation says %+v", budget, h.Get(lk), h.Get(rk), h.Get(sk), *b)
		}
	}
	id := ""
	for _, k := range []string{"x-request-id", "request-id", "apim-request-id"} {
		if id = h.Get(k); id != "" {
			break
		}
	}
	if id != w.RequestID {
		t.Errorf("the request ID header is %q, the expectation says %q", id, w.RequestID)
	}
	var hint time.Duration
	if ms, err := strconv.Atoi(h.Get("retry-after-ms")); err == nil {
		hint = time.Duration(ms) * time.Millisecond
	} else if s, err := strconv.Atoi(h.Get("retry-after")); err == nil {
		hint = time.Duration(s) * time.Second
	}
	if w.Error == nil || w.Error.Status == http.StatusOK {
		return // a hint on a 200 is no hint
	}
	want, _ := time.ParseDuration(w.RetryAfter)
	if hint != want {
		t.Errorf("the retry hint headers say %v, the expectation %v", hint, want)
	}
}
