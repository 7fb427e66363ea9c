package mocks

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"strings"
)

// defaultReply answers a call with no user text to echo.
const defaultReply = "Hello from fakellm."

// obj is a JSON object under construction.
type obj = map[string]any

// Tokens estimates the token count of s the way the fake server does: one token per 4 bytes,
// rounded up, so "" is 0 and "hello" is 2. Tests can use it to predict the usage a reply carries.
func Tokens(s string) int { return (len(s) + 3) / 4 }

// message is a chat message reduced to what the fake needs.
type message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	// Prefix marks the last assistant message as the beginning of the answer to continue
	// (DeepSeek's chat prefix completion, Mistral).
	Prefix bool `json:"prefix"`
}

// contentText returns the text of a content field: a string, or an array of blocks whose "text"
// (and, for Anthropic tool results, nested "content") is joined in the order it appears. It
// walks raw once, however deep the blocks nest (see scanner); raw must come from a request
// encoding/json accepted and whose depth withinDepth bounded.
func contentText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	s := scanner{b: raw}
	if s.peek() == '"' {
		return s.str()
	}
	var b strings.Builder
	s.appendText(&b)
	return b.String()
}

// appendText consumes a content value and writes its text to b.
func (s *scanner) appendText(b *strings.Builder) {
	switch s.peek() {
	case '"':
		b.WriteString(s.str())
	case '[':
		s.array(func() {
			s.object(func(name []byte) {
				switch {
				case is(name, "text") && s.peek() == '"':
					b.WriteString(s.str())
				case is(name, "content"):
					s.appendText(b)
				default:
					s.skip()
				}
			})
		})
	default:
		s.skip()
	}
}

// prompt sums the prompt tokens of msgs plus system, each text counted by count, and returns
// the last user message's text.
func prompt(count func(string) int, system json.RawMessage, msgs []message) (lastUser string, tokens int) {
	tokens = count(contentText(system))
	for _, m := range msgs {
		text := contentText(m.Content)
		tokens += count(text)
		if m.Role == "user" {
			lastUser = text
		}
	}
	return lastUser, max(tokens, 1)
}

// replyText picks the text of a reply: the step's, else the server's, else an echo.
func replyText(st Step, serverReply, lastUser string) string {
	switch {
	case st.Text != "":
		return st.Text
	case serverReply != "":
		return serverReply
	case lastUser != "":
		return lastUser
	}
	return defaultReply
}

// limitTokens cuts text to maxTokens tokens (<= 0: no limit) and reports whether it cut.
func limitTokens(text string, maxTokens int) (string, bool) {
	if maxTokens <= 0 || Tokens(text) <= maxTokens {
		return text, false
	}
	return text[:maxTokens*4], true
}

// maxDeltas bounds the deltas of one streamed text or tool call. The reply echoes the last
// user message, so a request of a few megabytes of one-letter words would otherwise become
// millions of events, each with its own JSON envelope: a reply a hundred times the request.
const maxDeltas = 4096

// chunks splits text into stream deltas, one word each with its leading space, so that joining
// them gives text back. A text of more than maxDeltas words is split into maxDeltas deltas of
// several words each.
func chunks(text string) []string {
	words := 0
	for i := 1; i < len(text); i++ {
		if text[i] == ' ' && text[i-1] != ' ' {
			words++
		}
	}
	per := words/maxDeltas + 1 // words per delta
	out := make([]string, 0, min(words+1, maxDeltas))
	start, n := 0, 0
	for i := 1; i < len(text); i++ {
		if text[i] == ' ' && text[i-1] != ' ' {
			if n++; n%per == 0 {
				out = append(out, text[start:i])
				start = i
			}
		}
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// argChunks splits tool-call arguments into deltas of 16 bytes, or of more when that would
// make more than maxDeltas of them.
func argChunks(args string) []string {
	size := max(16, (len(args)+maxDeltas-1)/maxDeltas)
	var out []string
	for len(args) > size {
		out = append(out, args[:size])
		args = args[size:]
	}
	return append(out, args)
}

// toolArgs returns tc's arguments, {} when empty.
func toolArgs(tc *ToolCall) string {
	if tc.Arguments == "" {
		return "{}"
	}
	return tc.Arguments
}

// toolID returns tc's id, or a deterministic one with the given prefix.
func toolID(tc *ToolCall, prefix string, seq int) string {
	if tc.ID != "" {
		return tc.ID
	}
	return fmt.Sprintf("%s%08d", prefix, seq)
}

// embedding returns a deterministic unit vector of dims values for input. The input is hashed
// once and each value derived from that hash and its index: hashing the input again for each
// value made the work the input's length times dims (4096 at most).
func embedding(input string, dims int) []float32 {
	h := fnv.New64a()
	_, _ = io.WriteString(h, input)
	seed := h.Sum64()
	v := make([]float32, dims)
	var norm float64
	for i := range v {
		x := float64(mix(seed+uint64(i)*0x9e3779b97f4a7c15)%2000)/1000 - 1
		v[i] = float32(x)
		norm += x * x
	}
	if norm == 0 {
		v[0], norm = 1, 1
	}
	for i := range v {
		v[i] = float32(float64(v[i]) / math.Sqrt(norm))
	}
	return v
}

// mix scrambles x (the splitmix64 finaliser), so that neighbouring indexes give unrelated
// values.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// float32LE encodes v as little-endian float32 bytes, OpenAI's base64 embedding encoding.
func float32LE(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}
