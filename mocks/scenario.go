package mocks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"
)

// Config is a scenario file: the JSON form of the server's options, read by the fakellm command
// (-scenario) and by [WithConfig]. Every field is optional:
//
//	{
//	  "reply": "text of every successful reply (default: echo the last user message)",
//	  "seed": 42, "chaos": 0.2,
//	  "script": [ step, … ],
//	  "scenarios": { "name": [ step, … ] },
//	  "routes": { "/v1/messages": [ step, … ] },
//	  "models": { "gpt-4o": [ step, … ] },
//	  "outages": [ {"startMs": 1000, "durationMs": 5000, "step": step,
//	                "model": "gpt-4o", "route": "/v1/chat/completions"}, … ],
//	  "contextWindows": { "small-model": 1000 },
//	  "rejectPrefill": true,
//	  "default": "name of the scenario answering calls that name none",
//	  "limits": {"requestsPerMinute": 60, "tokensPerMinute": 10000, "minuteMs": 60000},
//	  "keyLimits": { "sk-key": {"requestsPerMinute": 5} },
//	  "maxBodyBytes": 4194304,
//	  "journal": {"maxEntries": 10000, "maxBodyBytes": 1048576, "maxTotalBytes": 67108864},
//	  "latency": profile,
//	  "modelLatency": { "gpt-4o": profile },
//	  "keyLatency": { "sk-key": profile },
//	  "routeLatency": { "/v1/messages": profile },
//	  "routeLimits": { "/v1/messages": {"requestsPerMinute": 50} },
//	  "concurrency": {"max": 8, "openAIStatus": 529, "routes": {"/v1/messages": 2}}
//	}
//
// "routes" and "models" give a route (one of [Routes]) or a model (Azure: a deployment) a
// script of its own ([WithRouteScript], [WithModelScript]); "outages" are windows of time in
// which every matching request gets one step ([Outage]: startMs from the server's start, or
// "at", an RFC 3339 time, but not both; durationMs, positive; model and route, optional);
// "contextWindows" gives models a context window in tokens ([WithContextWindows]);
// "rejectPrefill" is true (every model), false, or a list of the models that refuse a trailing
// assistant message ([WithRejectPrefill]). At most [MaxModels] models each and [MaxOutages]
// outages. "limits" and "keyLimits" are rate limits ([RateLimits]). "maxBodyBytes" is the
// largest request body the server reads (a longer one is answered 413; default 4 MiB, see
// [WithMaxBodyBytes]); "journal" bounds what the journal keeps (the oldest requests dropped
// beyond maxEntries or maxTotalBytes, bodies cut to maxBodyBytes; see [JournalLimits]). Zero
// or absent values keep the defaults. "routeLimits" gives routes rate limits of their own
// ([WithRouteRateLimits]); "concurrency" is a [ConcurrencyLimit]. "latency", "modelLatency",
// "keyLatency" and "routeLatency" are latency profiles ([LatencyProfile], [WithLatency]),
// objects with these optional keys:
//
//	firstTokenMs, jitterMs, spread (0 to 4), stragglerRate (0 to 1), stragglerEvery,
//	stragglerMs, chunkDelayMs, headersFirst, seed
//
// durations from 0 to 86400000 (a day), stragglerRate or stragglerEvery but not both.
//
// A step is an object with these optional keys (the [Step] fields; durations in milliseconds):
//
//	status, error_type, code, message, quota, retry_after_ms, should_retry, headers (object of
//	strings), delay_ms, stall, reset, malformed, text, tool_call ({name, arguments, id}),
//	chunk_delay_ms, cut ("abort" or "clean"), cut_after, stream_error, error_after,
//	count_content, first_token_delay_ms, stall_after, stall_for_ms, malformed_at,
//	omit_terminal, refuse, refuse_category, refuse_after, content_filter, blocks (a list of
//	JSON objects, Anthropic content blocks), repeat, forever
//
// Unknown keys are errors, so a typo does not silently become a normal reply; so are keys
// that do nothing without another (stall_for_ms without stall_after, count_content without
// cut or stream_error, refuse_category or refuse_after without refuse or content_filter).
type Config struct {
	Reply     string            `json:"reply,omitempty"`
	Seed      int64             `json:"seed,omitempty"`
	Chaos     float64           `json:"chaos,omitempty"`
	Script    []Step            `json:"script,omitempty"`
	Scenarios map[string][]Step `json:"scenarios,omitempty"`
	// Routes gives routes (keys of Routes, such as "/v1/messages") sequences of their own.
	Routes  map[string][]Step `json:"routes,omitempty"`
	Default string            `json:"default,omitempty"`
	// Limits are the per-minute rate limits of every API key, KeyLimits those of particular
	// keys (see RateLimits).
	Limits    *RateLimits           `json:"limits,omitempty"`
	KeyLimits map[string]RateLimits `json:"keyLimits,omitempty"`
	// MaxBodyBytes is the largest request body the server reads (see WithMaxBodyBytes); 0 or
	// absent means DefaultMaxBodyBytes (4 MiB).
	MaxBodyBytes int64 `json:"maxBodyBytes,omitempty"`
	// Journal bounds what the journal keeps (see JournalLimits); absent or zero fields keep
	// the defaults.
	Journal *JournalLimits `json:"journal,omitempty"`
	// Models gives models (Azure: deployments) sequences of their own (see WithModelScript).
	Models map[string][]Step `json:"models,omitempty"`
	// Outages are windows of time in which matching requests get one step (see Outage).
	Outages []Outage `json:"outages,omitempty"`
	// ContextWindows gives models a context window in tokens (see WithContextWindows); a
	// window must be positive.
	ContextWindows map[string]int `json:"contextWindows,omitempty"`
	// RejectPrefill names the models that refuse a conversation ending with an assistant
	// message: true for every model, or a list (see WithRejectPrefill).
	RejectPrefill ModelSet `json:"rejectPrefill,omitempty"`
	// Latency is every request's latency profile, ModelLatency each model's (Azure: each
	// deployment's) and KeyLatency each API key's (see LatencyProfile, WithLatency).
	Latency      *LatencyProfile           `json:"latency,omitempty"`
	ModelLatency map[string]LatencyProfile `json:"modelLatency,omitempty"`
	KeyLatency   map[string]LatencyProfile `json:"keyLatency,omitempty"`
	// RouteLatency is each route's latency profile (see WithRouteLatency).
	RouteLatency map[string]LatencyProfile `json:"routeLatency,omitempty"`
	// RouteLimits are the rate limits of the calls to each route (see WithRouteRateLimits).
	RouteLimits map[string]RateLimits `json:"routeLimits,omitempty"`
	// Concurrency is the concurrency limit (see ConcurrencyLimit).
	Concurrency *ConcurrencyLimit `json:"concurrency,omitempty"`
}

// ParseConfig reads a scenario file's JSON and validates it.
func ParseConfig(data []byte) (*Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var cfg Config
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("mocks: scenario file: %w", err)
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("mocks: scenario file: %w", err)
	}
	return &cfg, nil
}

// LoadConfig reads and parses the scenario file at path.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseConfig(data)
}

// validate reports every bad value at once.
func (cfg *Config) validate() error {
	var errs []error
	if cfg.Chaos < 0 || cfg.Chaos > 1 {
		errs = append(errs, fmt.Errorf("chaos %v out of range [0, 1]", cfg.Chaos))
	}
	checkLimits := func(where string, l RateLimits) {
		for _, p := range l.problems("") {
			errs = append(errs, fmt.Errorf("%s: %w", where, p))
		}
	}
	if cfg.Limits != nil {
		checkLimits("limits", *cfg.Limits)
	}
	if cfg.MaxBodyBytes < 0 {
		errs = append(errs, fmt.Errorf("maxBodyBytes %d is negative", cfg.MaxBodyBytes))
	}
	for key, l := range cfg.KeyLimits {
		checkLimits("keyLimits."+key, l)
	}
	for route, l := range cfg.RouteLimits {
		if !validRoute(route) {
			errs = append(errs, fmt.Errorf("routeLimits: route %q is none of %v", route, Routes))
		}
		checkLimits("routeLimits."+route, l)
	}
	if cfg.Concurrency != nil {
		for _, p := range cfg.Concurrency.problems("concurrency.") {
			errs = append(errs, p)
		}
	}
	check := func(where string, steps []Step) {
		for i, st := range steps {
			if err := st.validate(); err != nil {
				errs = append(errs, fmt.Errorf("%s[%d]: %w", where, i, err))
			}
		}
	}
	check("script", cfg.Script)
	for name, steps := range cfg.Scenarios {
		if name == "" {
			errs = append(errs, errors.New("scenario with an empty name"))
		}
		check("scenarios."+name, steps)
	}
	for route, steps := range cfg.Routes {
		if !validRoute(route) {
			errs = append(errs, fmt.Errorf("route %q is none of %v", route, Routes))
		}
		check("routes."+route, steps)
	}
	errs = append(errs, cfg.validateModels(check)...)
	errs = append(errs, cfg.validateLatency()...)
	if _, ok := cfg.Scenarios[cfg.Default]; cfg.Default != "" && !ok {
		if _, builtin := builtins()[cfg.Default]; !builtin {
			errs = append(errs, fmt.Errorf("default scenario %q is not defined", cfg.Default))
		}
	}
	return errors.Join(errs...)
}

// validate reports what is wrong with st.
func (st Step) validate() error { return joinProblems(st.problems("")) }

// problems lists what is wrong with st, its fields named as a scenario file names them, after
// prefix.
func (st Step) problems(prefix string) []*Problem {
	var out []*Problem
	add := func(field string, value any, allowed string) {
		out = append(out, &Problem{Field: prefix + field, Value: value, Allowed: allowed})
	}
	if st.Status != 0 && (st.Status < 100 || st.Status > 599) {
		add("status", st.Status, "out of range [100, 599]")
	}
	if st.Cut != "" && st.Cut != CutAbort && st.Cut != CutClean {
		add("cut", clip(string(st.Cut), maxScenarioName), fmt.Sprintf("is neither %q nor %q", CutAbort, CutClean))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"cut_after", st.CutAfter}, {"error_after", st.ErrorAfter}, {"repeat", st.Repeat},
		{"stall_after", st.StallAfter}, {"malformed_at", st.MalformedAt}, {"refuse_after", st.RefuseAfter}} {
		if f.v < 0 {
			add(f.name, f.v, "is negative (allowed: 0 or more)")
		}
	}
	for _, f := range []struct {
		name   string
		alone  bool
		reason string
	}{
		{"stall_for_ms", st.StallFor != 0 && st.StallAfter == 0, "without stall_after does nothing"},
		{"count_content", st.CountContent && st.Cut == "" && st.StreamError == "", "without cut or stream_error does nothing"},
		{"refuse_category", st.RefuseCategory != "" && !st.refuses(), "without refuse or content_filter does nothing"},
		{"refuse_after", st.RefuseAfter != 0 && !st.refuses(), "without refuse or content_filter does nothing"},
	} {
		if f.alone {
			add(f.name, nil, f.reason)
		}
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"delay_ms", st.Delay}, {"retry_after_ms", st.RetryAfter}, {"chunk_delay_ms", st.ChunkDelay},
		{"first_token_delay_ms", st.FirstTokenDelay}, {"stall_for_ms", st.StallFor}} {
		if f.d < 0 {
			add(f.name, json.Number(msText(toMs(f.d))), "is negative (allowed: 0 or more)")
		}
	}
	if st.ToolCall != nil && st.ToolCall.Name == "" {
		add("tool_call", nil, "without a name")
	}
	for i, b := range st.Blocks {
		var head struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(b, &head) != nil || head.Type == "" {
			add(fmt.Sprintf("blocks[%d]", i), nil, `not a JSON object with a "type"`)
		}
	}
	return out
}

// stepJSON is the wire form of a Step.
type stepJSON struct {
	Status       int               `json:"status,omitempty"`
	ErrorType    string            `json:"error_type,omitempty"`
	Code         string            `json:"code,omitempty"`
	Message      string            `json:"message,omitempty"`
	Quota        bool              `json:"quota,omitempty"`
	RetryAfterMs float64           `json:"retry_after_ms,omitempty"`
	ShouldRetry  *bool             `json:"should_retry,omitempty"`
	Headers      map[string]string `json:"headers,omitempty"`
	DelayMs      float64           `json:"delay_ms,omitempty"`
	Stall        bool              `json:"stall,omitempty"`
	Reset        bool              `json:"reset,omitempty"`
	Malformed    bool              `json:"malformed,omitempty"`
	Text         string            `json:"text,omitempty"`
	ToolCall     *ToolCall         `json:"tool_call,omitempty"`
	ChunkDelayMs float64           `json:"chunk_delay_ms,omitempty"`
	Cut          CutMode           `json:"cut,omitempty"`
	CutAfter     int               `json:"cut_after,omitempty"`
	StreamError  string            `json:"stream_error,omitempty"`
	ErrorAfter   int               `json:"error_after,omitempty"`
	CountContent bool              `json:"count_content,omitempty"`
	FirstTokenMs float64           `json:"first_token_delay_ms,omitempty"`
	StallAfter   int               `json:"stall_after,omitempty"`
	StallForMs   float64           `json:"stall_for_ms,omitempty"`
	MalformedAt  int               `json:"malformed_at,omitempty"`
	OmitTerminal bool              `json:"omit_terminal,omitempty"`
	Refuse       string            `json:"refuse,omitempty"`
	RefuseCat    string            `json:"refuse_category,omitempty"`
	RefuseAfter  int               `json:"refuse_after,omitempty"`
	Filter       bool              `json:"content_filter,omitempty"`
	Expire       bool              `json:"expire,omitempty"`
	Blocks       []json.RawMessage `json:"blocks,omitempty"`
	Repeat       int               `json:"repeat,omitempty"`
	Forever      bool              `json:"forever,omitempty"`
}

// ms converts milliseconds to a Duration; toMs converts back.
func ms(f float64) time.Duration   { return time.Duration(f * float64(time.Millisecond)) }
func toMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// MarshalJSON writes st in the scenario file format (see [Config]).
func (st Step) MarshalJSON() ([]byte, error) { return json.Marshal(st.wire()) }

// wire converts st to its JSON form.
func (st Step) wire() stepJSON {
	w := stepJSON{Status: st.Status, ErrorType: st.ErrorType, Code: st.Code, Message: st.Message,
		Quota: st.Quota, RetryAfterMs: toMs(st.RetryAfter), ShouldRetry: st.ShouldRetry,
		DelayMs: toMs(st.Delay), Stall: st.Stall, Reset: st.Reset, Malformed: st.Malformed,
		Text: st.Text, ToolCall: st.ToolCall, ChunkDelayMs: toMs(st.ChunkDelay), Cut: st.Cut,
		CutAfter: st.CutAfter, StreamError: st.StreamError, ErrorAfter: st.ErrorAfter,
		CountContent: st.CountContent, FirstTokenMs: toMs(st.FirstTokenDelay), StallAfter: st.StallAfter,
		StallForMs: toMs(st.StallFor), MalformedAt: st.MalformedAt, OmitTerminal: st.OmitTerminal,
		Refuse: st.Refuse, RefuseCat: st.RefuseCategory, RefuseAfter: st.RefuseAfter, Filter: st.ContentFilter,
		Expire: st.Expire, Blocks: st.Blocks, Repeat: st.Repeat, Forever: st.Forever}
	if len(st.Header) > 0 {
		w.Headers = map[string]string{}
		for k := range st.Header {
			w.Headers[k] = st.Header.Get(k)
		}
	}
	return w
}

// UnmarshalJSON reads a step in the scenario file format (see [Config]); unknown keys are errors.
func (st *Step) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var w stepJSON
	if err := dec.Decode(&w); err != nil {
		return err
	}
	*st = Step{Status: w.Status, ErrorType: w.ErrorType, Code: w.Code, Message: w.Message,
		Quota: w.Quota, RetryAfter: ms(w.RetryAfterMs), ShouldRetry: w.ShouldRetry,
		Delay: ms(w.DelayMs), Stall: w.Stall, Reset: w.Reset, Malformed: w.Malformed,
		Text: w.Text, ToolCall: w.ToolCall, ChunkDelay: ms(w.ChunkDelayMs), Cut: w.Cut,
		CutAfter: w.CutAfter, StreamError: w.StreamError, ErrorAfter: w.ErrorAfter,
		CountContent: w.CountContent, FirstTokenDelay: ms(w.FirstTokenMs), StallAfter: w.StallAfter,
		StallFor: ms(w.StallForMs), MalformedAt: w.MalformedAt, OmitTerminal: w.OmitTerminal,
		Refuse: w.Refuse, RefuseCategory: w.RefuseCat, RefuseAfter: w.RefuseAfter, ContentFilter: w.Filter,
		Expire: w.Expire, Blocks: w.Blocks, Repeat: w.Repeat, Forever: w.Forever}
	for k, v := range w.Headers {
		if st.Header == nil {
			st.Header = http.Header{}
		}
		st.Header.Set(k, v)
	}
	return nil
}
