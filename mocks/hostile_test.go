package mocks_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/steadyllm/steady/mocks"
)

// The tests below send hostile requests and assert on the work the server does (bytes
// allocated, in this process, while it answers), never on time: they compare a request with
// one of the same shape at four times the size, or at four times the nesting, and allow a
// generous factor, so that only super-linear growth fails them on a loaded machine.

// allocated returns the bytes the process allocated while f ran, the least of three runs so
// that a stray background allocation does not count.
func allocated(f func()) uint64 {
	best := ^uint64(0)
	for range 3 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		best = min(best, after.TotalAlloc-before.TotalAlloc)
	}
	return best
}

// workOf returns the bytes allocated to send body to p and read the answer, which must have
// status want.
func workOf(t *testing.T, s *mocks.Server, p string, hdr map[string]string, body string, want int) uint64 {
	t.Helper()
	return allocated(func() {
		res, b := mustDo(t, s, http.MethodPost, p, hdr, body)
		if res.StatusCode != want {
			t.Fatalf("POST %s: status %d, want %d: %.300s", p, res.StatusCode, want, b)
		}
	})
}

// ratioAtMost fails the test when big cost more than factor times small.
func ratioAtMost(t *testing.T, what string, small, big uint64, factor float64) {
	t.Helper()
	r := float64(big) / float64(max(small, 1))
	t.Logf("%s: %d bytes, then %d bytes (x%.1f)", what, small, big, r)
	if r > factor {
		t.Errorf("%s: work grew x%.1f, want at most x%.1f (super-linear)", what, r, factor)
	}
}

// manyMessages is a chat body (OpenAI, or Anthropic with max_tokens) of n user messages.
func manyMessages(n int, anthropic bool) string {
	var b strings.Builder
	b.WriteString(`{"model":"m",`)
	if anthropic {
		b.WriteString(`"max_tokens":16,`)
	}
	b.WriteString(`"messages":[`)
	text := strings.Repeat("w", 64)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"role":"user","content":"%s %d"}`, text, i)
	}
	b.WriteString(`]}`)
	return b.String()
}

func TestServer_ManyMessagesCostLinearWork(t *testing.T) {
	s := newServer(t)
	for _, tc := range []struct {
		name, path string
		hdr        map[string]string
		anthropic  bool
	}{
		{"openai", "/v1/chat/completions", openAIHeaders(), false},
		{"anthropic", "/v1/messages", anthropicHeaders(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			small := workOf(t, s, tc.path, tc.hdr, manyMessages(1000, tc.anthropic), http.StatusOK)
			big := workOf(t, s, tc.path, tc.hdr, manyMessages(4000, tc.anthropic), http.StatusOK)
			ratioAtMost(t, "1000 then 4000 messages", small, big, 8)
		})
	}
}

// nestedToolResult is an Anthropic body whose one message nests tool_result blocks depth deep
// around a text of size bytes.
func nestedToolResult(depth, size int) string {
	inner := `[{"type":"text","text":"` + strings.Repeat("x", size) + `"}]`
	for range depth {
		inner = `[{"type":"tool_result","tool_use_id":"t","content":` + inner + `}]`
	}
	return `{"model":"m","max_tokens":16,"messages":[{"role":"user","content":` + inner + `}]}`
}

// nestedSchema is an OpenAI body whose json_schema nests arrays depth deep around a string
// schema carrying a description of size bytes.
func nestedSchema(depth, size int) string {
	schema := `{"type":"string","description":"` + strings.Repeat("d", size) + `"}`
	for range depth {
		schema = `{"type":"array","items":` + schema + `}`
	}
	return `{"model":"m","messages":[{"role":"user","content":"hi"}],` +
		`"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":` + schema + `}}}`
}

func TestServer_NestingDoesNotMultiplyWork(t *testing.T) {
	s := newServer(t)
	const size = 256 << 10
	for _, tc := range []struct {
		name, path string
		hdr        map[string]string
		body       func(depth int) string
		depth      int
	}{
		{"anthropic nested tool results", "/v1/messages", anthropicHeaders(),
			func(d int) string { return nestedToolResult(d, size) }, 6},
		{"openai nested schema", "/v1/chat/completions", openAIHeaders(),
			func(d int) string { return nestedSchema(d, size) }, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shallow := workOf(t, s, tc.path, tc.hdr, tc.body(tc.depth), http.StatusOK)
			deep := workOf(t, s, tc.path, tc.hdr, tc.body(4*tc.depth), http.StatusOK)
			ratioAtMost(t, fmt.Sprintf("depth %d then %d", tc.depth, 4*tc.depth), shallow, deep, 2)
		})
	}
}

func TestServer_EmbeddingWorkDoesNotMultiplyInputByDimensions(t *testing.T) {
	s := newServer(t)
	input := strings.Repeat("e", 1<<20)
	body := func(dims int) string {
		return fmt.Sprintf(`{"model":"e","input":"%s","dimensions":%d}`, input, dims)
	}
	few := workOf(t, s, "/v1/embeddings", openAIHeaders(), body(16), http.StatusOK)
	many := workOf(t, s, "/v1/embeddings", openAIHeaders(), body(1024), http.StatusOK)
	ratioAtMost(t, "16 then 1024 dimensions of a 1 MiB input", few, many, 3)
}

func TestServer_UnknownScenarioAnswerIsBounded(t *testing.T) {
	s := newServer(t)
	hdr := openAIHeaders()
	hdr[mocks.ScenarioHeader] = strings.Repeat("n", 256<<10)
	res, b := mustDo(t, s, http.MethodPost, "/v1/chat/completions", hdr, chatBody)
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d", res.StatusCode)
	}
	if len(b) > 1024 {
		t.Errorf("a %d-byte scenario name drew a %d-byte answer; want it cut short", 256<<10, len(b))
	}
	if msg, _ := path(decode(t, b), "error", "message").(string); !strings.Contains(msg, "unknown fake scenario") {
		t.Errorf("message %q", msg)
	}
}

// discard reads r to the end, for bodies the test does not look at.
func discard(r io.Reader) { _, _ = io.Copy(io.Discard, r) }

func TestServer_RefusesBodiesNestedBeyondMaxJSONDepth(t *testing.T) {
	s := newServer(t)
	// nest is levels arrays, one inside the other.
	nest := func(levels int) string {
		return strings.Repeat("[", levels) + strings.Repeat("]", levels)
	}
	for _, tc := range []struct {
		name, path, errType string
		hdr                 map[string]string
		body                func(content string) string
	}{
		{"openai", "/v1/chat/completions", "invalid_request_error", openAIHeaders(), func(c string) string {
			return `{"model":"m","messages":[{"role":"user","content":"hi","extra":` + c + `}]}`
		}},
		{"anthropic", "/v1/messages", "invalid_request_error", anthropicHeaders(), func(c string) string {
			return `{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi","extra":` + c + `}]}`
		}},
		{"embeddings", "/v1/embeddings", "invalid_request_error", openAIHeaders(), func(c string) string {
			return `{"model":"e","input":"hi","extra":` + c + `}`
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The extra member sits 3 levels deep (body, messages, message) or 1 (embeddings).
			around := 3
			if tc.name == "embeddings" {
				around = 1
			}
			if res, b := mustDo(t, s, http.MethodPost, tc.path, tc.hdr, tc.body(nest(mocks.MaxJSONDepth-around))); res.StatusCode != http.StatusOK {
				t.Fatalf("at the limit: status %d: %s", res.StatusCode, b)
			}
			res, b := mustDo(t, s, http.MethodPost, tc.path, tc.hdr, tc.body(nest(mocks.MaxJSONDepth-around+1)))
			if res.StatusCode != http.StatusBadRequest {
				t.Fatalf("past the limit: status %d: %s", res.StatusCode, b)
			}
			v := decode(t, b)
			if got := path(v, "error", "type"); got != tc.errType {
				t.Errorf("error type %v in %s", got, b)
			}
			if msg, _ := path(v, "error", "message").(string); !strings.Contains(msg, "nested deeper than 64") {
				t.Errorf("message %q", msg)
			}
			if tc.name == "anthropic" && path(v, "type") != "error" {
				t.Errorf("not Anthropic's envelope: %s", b)
			}
		})
	}
}

// endless is a body of unknown length that never ends, counting what was read of it.
type endless struct{ read int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	e.read += int64(len(p))
	return len(p), nil
}

func TestServer_AnswersOversizedBodies413InEachAPIsShape(t *testing.T) {
	const limit = 64 << 10
	s := newServer(t, mocks.WithMaxBodyBytes(limit))
	for _, tc := range []struct {
		name, path string
		hdr        map[string]string
		errType    string
	}{
		{"openai", "/v1/chat/completions", openAIHeaders(), "request_too_large"},
		{"anthropic", "/v1/messages", anthropicHeaders(), "request_too_large"},
		{"azure", "/openai/deployments/d/chat/completions?api-version=2024-10-21", map[string]string{"Api-Key": "k"}, "request_too_large"},
	} {
		for _, kind := range []string{"content-length", "chunked", "at the limit"} {
			t.Run(tc.name+" "+kind, func(t *testing.T) {
				var body io.Reader
				var src *endless
				switch kind {
				case "content-length":
					body = strings.NewReader(strings.Repeat(" ", limit+1))
				case "chunked":
					src = &endless{}
					body = src
				case "at the limit":
					body = strings.NewReader(chatBody + strings.Repeat(" ", limit-len(chatBody)))
					if tc.name == "anthropic" {
						body = strings.NewReader(messagesBody + strings.Repeat(" ", limit-len(messagesBody)))
					}
				}
				req, err := http.NewRequest(http.MethodPost, s.URL()+tc.path, body)
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range tc.hdr {
					req.Header.Set(k, v)
				}
				res, err := s.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, err := readAllClose(res)
				if err != nil {
					t.Fatal(err)
				}
				if kind == "at the limit" {
					if res.StatusCode != http.StatusOK {
						t.Fatalf("a body of exactly the limit: status %d: %s", res.StatusCode, b)
					}
					return
				}
				if res.StatusCode != http.StatusRequestEntityTooLarge {
					t.Fatalf("status %d: %s", res.StatusCode, b)
				}
				v := decode(t, b)
				if got := path(v, "error", "type"); got != tc.errType {
					t.Errorf("error type %v in %s", got, b)
				}
				if tc.name == "anthropic" && path(v, "type") != "error" {
					t.Errorf("not Anthropic's envelope: %s", b)
				}
				last, _ := s.Journal().Last()
				if last.Step != "413 size" || last.BodyLen > limit+1 {
					t.Errorf("journal: step %q, %d body bytes read", last.Step, last.BodyLen)
				}
			})
		}
	}
}

func TestServer_RefusesEmbeddingRequestsBeyondTheirBounds(t *testing.T) {
	s := newServer(t)
	inputs := func(n int) string { return `[` + strings.Repeat(`"a",`, n-1) + `"a"]` }
	for _, tc := range []struct {
		name, body, param string
		status            int
	}{
		{"2048 inputs", `{"model":"e","input":` + inputs(mocks.MaxEmbeddingInputs) + `}`, "", http.StatusOK},
		{"2049 inputs", `{"model":"e","input":` + inputs(mocks.MaxEmbeddingInputs+1) + `}`, "input", http.StatusBadRequest},
		{"64 inputs of 4096 dimensions", `{"model":"e","dimensions":4096,"input":` + inputs(64) + `}`, "", http.StatusOK},
		{"2048 inputs of 1025 dimensions", `{"model":"e","dimensions":1025,"input":` + inputs(mocks.MaxEmbeddingInputs) + `}`, "dimensions", http.StatusBadRequest},
		{"513 inputs of 4096 dimensions", `{"model":"e","dimensions":4096,"input":` + inputs(mocks.MaxEmbeddingValues/4096+1) + `}`, "dimensions", http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, b := mustDo(t, s, http.MethodPost, "/v1/embeddings", openAIHeaders(), tc.body)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d: %.300s", res.StatusCode, b)
			}
			if tc.param != "" {
				if got := path(decode(t, b), "error", "param"); got != tc.param {
					t.Errorf("param %v: %s", got, b)
				}
			}
		})
	}
}

// BenchmarkServer_HostileRequest sends hostile requests of growing size over loopback: the
// time and bytes per request should grow in step with the size (x4 each row), not faster.
func BenchmarkServer_HostileRequest(b *testing.B) {
	s := mocks.NewServer(mocks.WithJournalLimits(mocks.JournalLimits{MaxEntries: 16}))
	defer s.Close()
	run := func(b *testing.B, p string, hdr map[string]string, body string) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for range b.N {
			req, _ := http.NewRequest(http.MethodPost, s.URL()+p, strings.NewReader(body))
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			res, err := s.Client().Do(req)
			if err != nil {
				b.Fatal(err)
			}
			discard(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				b.Fatalf("status %d", res.StatusCode)
			}
		}
	}
	for _, n := range []int{1000, 4000, 16000} {
		b.Run(fmt.Sprintf("OpenAIMessages=%d", n), func(b *testing.B) {
			run(b, "/v1/chat/completions", openAIHeaders(), manyMessages(n, false))
		})
	}
	for _, n := range []int{1000, 4000, 16000} {
		b.Run(fmt.Sprintf("AnthropicMessages=%d", n), func(b *testing.B) {
			run(b, "/v1/messages", anthropicHeaders(), manyMessages(n, true))
		})
	}
	for _, d := range []int{6, 12, 24} {
		b.Run(fmt.Sprintf("NestedToolResults=%d", d), func(b *testing.B) {
			run(b, "/v1/messages", anthropicHeaders(), nestedToolResult(d, 256<<10))
		})
	}
	for _, d := range []int{12, 24, 48} {
		b.Run(fmt.Sprintf("NestedSchema=%d", d), func(b *testing.B) {
			run(b, "/v1/chat/completions", openAIHeaders(), nestedSchema(d, 256<<10))
		})
	}
	for _, dims := range []int{64, 256, 1024} {
		b.Run(fmt.Sprintf("EmbeddingDims=%d", dims), func(b *testing.B) {
			run(b, "/v1/embeddings", openAIHeaders(), fmt.Sprintf(`{"model":"e","input":"%s","dimensions":%d}`, strings.Repeat("e", 1<<20), dims))
		})
	}
}

func TestServer_StreamsALongEchoInABoundedNumberOfEvents(t *testing.T) {
	s := newServer(t)
	text := strings.TrimSpace(strings.Repeat("w ", 100000)) // 100 000 one-letter words
	for _, tc := range []struct {
		name, path, body string
		hdr              map[string]string
		delta            func(v map[string]any) (string, bool)
	}{
		{"openai", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"` + text + `"}]}`, openAIHeaders(),
			func(v map[string]any) (string, bool) {
				s, ok := path(v, "choices", 0, "delta", "content").(string)
				return s, ok
			}},
		{"anthropic", "/v1/messages", `{"model":"m","max_tokens":100000,"stream":true,"messages":[{"role":"user","content":"` + text + `"}]}`, anthropicHeaders(),
			func(v map[string]any) (string, bool) { s, ok := path(v, "delta", "text").(string); return s, ok }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, evs, err := stream(t, s, tc.path, tc.hdr, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			var got strings.Builder
			deltas := 0
			for _, e := range evs {
				if e.data == "[DONE]" {
					continue
				}
				if d, ok := tc.delta(decode(t, []byte(e.data))); ok && d != "" {
					got.WriteString(d)
					deltas++
				}
			}
			if got.String() != text {
				t.Errorf("the deltas join to %d bytes, want the %d-byte text", got.Len(), len(text))
			}
			if deltas > 4096 {
				t.Errorf("%d deltas for one reply, want at most 4096", deltas)
			}
		})
	}
}

func TestServer_AnnouncedButUnsentBodiesCostNothing(t *testing.T) {
	const conns, announced = 16, mocks.DefaultMaxBodyBytes
	s := newServer(t)
	host := strings.TrimPrefix(s.URL(), "http://")
	work := allocated(func() {
		s.Journal().Reset()
		var open []net.Conn
		for range conns {
			c, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			open = append(open, c)
			fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: fake\r\nAuthorization: Bearer k\r\nContent-Length: %d\r\n\r\n{\"model\"", announced)
		}
		for _, c := range open { // the clients give up: each handler reads what came and answers
			c.Close()
		}
		if err := s.Journal().Wait(context.Background(), conns); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%d requests announcing %d bytes and sending 8: %d bytes allocated", conns, announced, work)
	if work > conns*announced/4 {
		t.Errorf("%d bytes allocated for %d announced bodies that never came", work, conns)
	}
}
