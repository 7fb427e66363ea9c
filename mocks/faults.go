package mocks

import (
	"encoding/json"
	"math"
	"net"
	"net/http"
	"strconv"
	"time"
)

// call is one request being answered.
type call struct {
	s          *Server
	w          http.ResponseWriter
	r          *http.Request
	seq        int
	api        api
	endpoint   endpoint
	deployment string
	route      string // the route name (see Routes), "" for the others
	concRoute  int    // the index of the route whose concurrency count holds the call, -1 for none
	// overCapacity marks a 429 for the concurrency limit: no rate limit, so its rate-limit
	// headers show room.
	overCapacity bool

	// From the request body.
	model        string
	stream       bool
	includeUsage bool
	maxTokens    int
	lastUser     string
	lastRole     string // the role of the last message: "assistant" for a prefill
	// prefill is the beginning of the answer the request asks to continue (see continued),
	// "" for none.
	prefill      string
	promptTokens int
	feat         features
	resp         respCall     // a Responses request's own
	budget       *budgetState // the key's rate-limit budgets, when the server enforces some
	budgetAt     time.Time
	inputs       []string // embeddings
	dims         int
	base64       bool

	lat latencyDraw // what the latency profile gave the call (see LatencyProfile)
}

// serve answers the call as st says.
func (c *call) serve(st Step) {
	if st.Delay > 0 && !c.wait(st.Delay) {
		abort()
	}
	if st.Stall {
		c.wait(-1)
		abort()
	}
	if st.Reset {
		c.reset()
		return
	}
	if !c.waitFirstToken() {
		abort()
	}
	c.headers(st)
	switch {
	case st.isError():
		c.writeError(st)
	case st.StreamError != "" && !c.stream:
		c.writeError(Step{Status: c.statusOf(st.StreamError), ErrorType: st.StreamError, Message: st.Message})
	case st.Malformed:
		c.malformed()
	case c.endpoint == modelsEndpoint:
		c.sendJSON(st, c.modelsBody())
	case c.endpoint == embeddingsEndpoint:
		c.sendJSON(st, c.embeddingsBody())
	case c.endpoint == countEndpoint:
		c.sendJSON(st, obj{"input_tokens": c.promptTokens})
	case c.api == anthropic:
		c.anthropicMessage(st)
	case c.endpoint == responsesEndpoint:
		c.openAIResponse(st)
	default:
		c.openAIChat(st)
	}
}

// abort drops the connection without finishing the response; net/http recovers this panic
// quietly and closes the connection, so a client mid-body sees an unexpected EOF.
func abort() { panic(http.ErrAbortHandler) }

// reset closes the connection with an RST before any response byte.
func (c *call) reset() {
	hj, ok := c.w.(http.Hijacker)
	if !ok {
		abort()
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		abort()
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}

// headers sets the response headers every reply carries: request id, rate limits, retry hints
// and the step's own headers.
func (c *call) headers(st Step) {
	h := c.w.Header()
	limited := st.Status == http.StatusTooManyRequests && !st.Quota && !c.overCapacity
	reset := 20 * time.Millisecond
	if limited && st.RetryAfter > 0 {
		reset = st.RetryAfter
	}
	if c.api == anthropic {
		anthropicHeaders(h, c.requestID(), c.promptTokens, limited, reset)
	} else {
		openAIHeaders(h, c.requestID(), c.promptTokens, limited, reset)
	}
	if st.RetryAfter > 0 {
		ms := strconv.FormatInt(st.RetryAfter.Milliseconds(), 10)
		h.Set("Retry-After-Ms", ms)
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(st.RetryAfter.Seconds()))))
		if c.api == azure {
			h.Set("X-Ms-Retry-After-Ms", ms)
		}
	}
	if c.budget != nil {
		c.setLimitHeaders(*c.budget, c.budgetAt)
	}
	if st.ShouldRetry != nil {
		h.Set("X-Should-Retry", strconv.FormatBool(*st.ShouldRetry))
	}
	for k, vs := range st.Header {
		h[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
}

// requestID returns the call's request id.
func (c *call) requestID() string {
	if c.api == anthropic {
		return c.s.requestID("req_", c.seq)
	}
	return c.s.requestID("req-", c.seq)
}

// writeError sends st's error status in the dialect's envelope.
func (c *call) writeError(st Step) {
	c.writeErrorParam(st, "")
}

// writeErrorParam is writeError naming the request parameter at fault (OpenAI's "param").
func (c *call) writeErrorParam(st Step, param string) {
	status := st.Status
	var body any
	if c.api == anthropic {
		body = anthropicError(st, c.requestID())
	} else {
		e := openAIError(st)
		if param != "" {
			e["error"].(obj)["param"] = param
		}
		body = e
	}
	c.writeJSON(status, body)
}

// paramError is a request the API refuses because of one parameter.
type paramError struct{ param, msg string }

func (e *paramError) Error() string { return e.msg }

func invalidParam(param, msg string) error { return &paramError{param: param, msg: msg} }

// statusOf returns the HTTP status usual for a provider error type.
func (c *call) statusOf(errType string) int {
	switch errType {
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "rate_limit_error", "insufficient_quota":
		return http.StatusTooManyRequests
	case "timeout_error":
		return http.StatusGatewayTimeout
	case "overloaded_error":
		if c.api == anthropic {
			return 529
		}
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// writeJSON sends v as a complete JSON reply.
func (c *call) writeJSON(status int, v any) {
	b, _ := json.Marshal(v)
	c.w.Header().Set("Content-Type", "application/json")
	c.w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	c.w.WriteHeader(status)
	_, _ = c.w.Write(b)
}

// sendJSON sends a successful JSON reply, cut short when st says so: CutAbort promises the
// whole length and drops the connection halfway; CutClean ends the body cleanly halfway.
func (c *call) sendJSON(st Step, v any) {
	if st.Cut == "" {
		c.writeJSON(http.StatusOK, v)
		return
	}
	b, _ := json.Marshal(v)
	h := c.w.Header()
	h.Set("Content-Type", "application/json")
	if st.Cut == CutAbort {
		h.Set("Content-Length", strconv.Itoa(len(b)))
	}
	c.w.WriteHeader(http.StatusOK)
	_, _ = c.w.Write(b[:len(b)/2])
	if st.Cut == CutAbort {
		if f, ok := c.w.(http.Flusher); ok {
			f.Flush()
		}
		abort()
	}
}

// malformed sends a 200 whose body breaks off in the middle of a JSON object.
func (c *call) malformed() {
	broken := `{"id":"broken","object":`
	if c.stream {
		sw := c.startStream(Step{})
		switch {
		case c.api == anthropic:
			sw.raw("message_start", []byte(`{"type":"message_start","message":{"id":`))
		case c.endpoint == responsesEndpoint:
			sw.raw("response.created", []byte(`{"type":"response.created","sequence_number":0,"response":{"id":`))
		default:
			sw.raw("", []byte(broken))
		}
		return
	}
	c.w.Header().Set("Content-Type", "application/json")
	c.w.WriteHeader(http.StatusOK)
	_, _ = c.w.Write([]byte(broken))
}

// checkAuth returns why the call's credentials are refused, or "".
func (c *call) checkAuth() string {
	if c.api == anthropic {
		return anthropicAuth(c.r, c.s.apiKey)
	}
	return openAIAuth(c.r, c.api == azure, c.s.apiKey)
}

// checkRequest returns why the call's headers or query are refused, or "".
func (c *call) checkRequest() string {
	switch {
	case c.api == anthropic && c.r.Header.Get("Anthropic-Version") == "":
		return "anthropic-version: header is required"
	case c.api == azure && !c.v1() && c.r.URL.Query().Get("api-version") == "":
		return "Missing required query parameter: api-version"
	}
	return ""
}

// v1 reports whether the call is to Azure's v1 API (/openai/v1/…: responses, the answers they
// store, conversations), which takes no api-version.
func (c *call) v1() bool {
	return c.endpoint == responsesEndpoint || c.endpoint == storedEndpoint || c.endpoint == conversationsEndpoint
}

// parse reads the request body; its error message goes back to the client in a 400. A body
// nested deeper than MaxJSONDepth is refused first, in one pass, so that no later step
// recurses deeper.
func (c *call) parse(body []byte) error {
	if c.endpoint != modelsEndpoint && !withinDepth(body, MaxJSONDepth) {
		return errTooDeep
	}
	switch c.endpoint {
	case chatEndpoint:
		return c.parseChat(body)
	case embeddingsEndpoint:
		return c.parseEmbeddings(body)
	case messagesEndpoint:
		return c.parseMessages(body, false)
	case countEndpoint:
		return c.parseMessages(body, true)
	case responsesEndpoint:
		return c.parseResponses(body)
	}
	return nil
}
