package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"testing"

	openaisdk "github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
)

// The Responses wire (POST /v1/responses): the same exchange as the other wires — the same
// request, the same answer text — as OpenAI's Responses API sends it today, the answer
// streamed in responsesChunks output_text deltas. Its clients: steady's OpenAI provider on
// the Responses API (openai.Config.API) behind the full pipeline, and openai-go's
// client.Responses, retries off.

// responsesChunks is how many content deltas the Responses stream carries (issue 26 measures
// the wire on a 64-chunk stream).
const responsesChunks = 64

const (
	responsesID    = "resp_68a1c2e3f4b5a6d7e8f90123456789ab0cdef1234567890a"
	responsesMsgID = "msg_68a1c2e4a0b1c2d3e4f50617283940aa0cdef1234567890a"
)

// responsesObject is the response object with status, output and usage filled in, every
// other field as the API sends it for this request.
func responsesObject(status, output, usage string) string {
	return `{"id":"` + responsesID + `","object":"response","created_at":1763890000,"status":"` + status + `",` +
		`"background":false,"billing":{"payer":"developer"},"error":null,"incomplete_details":null,"instructions":null,` +
		`"max_output_tokens":300,"max_tool_calls":null,"model":"gpt-4o-mini-2024-07-18","output":` + output + `,` +
		`"parallel_tool_calls":true,"previous_response_id":null,"prompt_cache_key":null,` +
		`"reasoning":{"effort":null,"summary":null},"safety_identifier":null,"service_tier":"default","store":true,` +
		`"temperature":0.3,"text":{"format":{"type":"text"},"verbosity":"medium"},"tool_choice":"auto","tools":[],` +
		`"top_logprobs":0,"top_p":1.0,"truncation":"disabled","usage":` + usage + `,"user":null,"metadata":{}}`
}

// responsesMessage is the answer's output message item.
func responsesMessage(status, text string) string {
	return `{"id":"` + responsesMsgID + `","type":"message","status":"` + status + `","content":[` +
		`{"type":"output_text","annotations":[],"logprobs":[],"text":` + quote(text) + `}],"role":"assistant"}`
}

const responsesUsage = `{"input_tokens":86,"input_tokens_details":{"cached_tokens":0},"output_tokens":128,` +
	`"output_tokens_details":{"reasoning_tokens":0},"total_tokens":214}`

// responsesAnswer is the whole answer, as POST /v1/responses returns it.
var responsesAnswer = []byte(responsesObject("completed", "["+responsesMessage("completed", answer)+"]", responsesUsage))

// responsesStream is the streamed answer — created, in_progress, the message item and its
// part opening, responsesChunks output_text deltas (each with its obfuscation padding, as the
// API sends them by default), their done events, response.completed — and responsesStreamHead
// the part of it a client has read once the first content delta arrived.
var responsesStream, responsesStreamHead = func() ([]byte, []byte) {
	var b bytes.Buffer
	seq := 0
	event := func(name, data string) {
		fmt.Fprintf(&b, "event: %s\ndata: {\"type\":%q,\"sequence_number\":%d,%s}\n\n", name, name, seq, data)
		seq++
	}
	at := `"item_id":"` + responsesMsgID + `","output_index":0,"content_index":0`
	event("response.created", `"response":`+responsesObject("in_progress", "[]", "null"))
	event("response.in_progress", `"response":`+responsesObject("in_progress", "[]", "null"))
	event("response.output_item.added", `"output_index":0,"item":{"id":"`+responsesMsgID+`","type":"message","status":"in_progress","content":[],"role":"assistant"}`)
	event("response.content_part.added", at+`,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}`)
	var first int
	for i := range responsesChunks {
		t := answer[i*len(answer)/responsesChunks : (i+1)*len(answer)/responsesChunks]
		event("response.output_text.delta", at+`,"delta":`+quote(t)+`,"logprobs":[],"obfuscation":"`+"Zq8vXw3pLk"[:10-len(t)%10]+`"`)
		if i == 0 {
			first = b.Len()
		}
	}
	event("response.output_text.done", at+`,"text":`+quote(answer)+`,"logprobs":[]`)
	event("response.content_part.done", at+`,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":`+quote(answer)+`}`)
	event("response.output_item.done", `"output_index":0,"item":`+responsesMessage("completed", answer))
	event("response.completed", `"response":`+responsesObject("completed", "["+responsesMessage("completed", answer)+"]", responsesUsage))
	return b.Bytes(), b.Bytes()[:first]
}()

func responsesFactory(hc *http.Client) (providers.Provider, error) {
	return openai.New(openai.Config{Name: "openai", API: openai.Responses, BaseURL: "http://127.0.0.1:1/v1", APIKey: "sk-bench",
		HTTPClient: hc, Model: openAIModel})
}

func responsesSubjects(rt http.RoundTripper) []subject {
	return []subject{steadySubject(rt, responsesFactory), openAIGoResponses(rt)}
}

// openAIGoResponses is openai-go's Responses client (client.Responses.New and NewStreaming),
// retries off, sending what steady sends: the system and user prompts as input messages, the
// token limit and the temperature.
func openAIGoResponses(rt http.RoundTripper) subject {
	c := openaisdk.NewClient(
		openaiopt.WithBaseURL("http://127.0.0.1:1/v1"),
		openaiopt.WithAPIKey("sk-bench"),
		openaiopt.WithHTTPClient(&http.Client{Transport: rt}),
		openaiopt.WithMaxRetries(0),
	)
	msg := func(role responses.EasyInputMessageRole, text string) responses.ResponseInputItemUnionParam {
		return responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{Role: role,
			Type: responses.EasyInputMessageTypeMessage, Content: responses.EasyInputMessageContentUnionParam{OfString: openaisdk.String(text)}}}
	}
	params := responses.ResponseNewParams{
		Model: openAIModel,
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			msg(responses.EasyInputMessageRoleSystem, systemPrompt),
			msg(responses.EasyInputMessageRoleUser, userPrompt),
		}},
		MaxOutputTokens: openaisdk.Int(maxTokens),
		Temperature:     openaisdk.Float(temperature),
	}
	textOf := func(ev responses.ResponseStreamEventUnion) string {
		if ev.Type == "response.output_text.delta" {
			return ev.Delta
		}
		return ""
	}
	return subject{
		name: "openai-go",
		chat: func(ctx context.Context) (string, error) {
			resp, err := c.Responses.New(ctx, params)
			if err != nil {
				return "", err
			}
			return resp.OutputText(), nil
		},
		stream: func(ctx context.Context, afterFirst func()) (int, int, error) {
			s := c.Responses.NewStreaming(ctx, params)
			defer s.Close()
			deltas, text := 0, 0
			for s.Next() {
				if t := textOf(s.Current()); t != "" {
					deltas, text = deltas+1, text+len(t)
					if deltas == 1 && afterFirst != nil {
						afterFirst()
					}
				}
			}
			return deltas, text, s.Err()
		},
		open: func(ctx context.Context) (func() error, error) {
			s := c.Responses.NewStreaming(ctx, params)
			for s.Next() {
				if textOf(s.Current()) != "" {
					return s.Close, nil
				}
			}
			s.Close()
			return nil, fmt.Errorf("openai-go: stream ended before content: %v", s.Err())
		},
	}
}

// captureTransport keeps the body of the last request it passes on.
type captureTransport struct {
	http.RoundTripper
	body []byte
}

func (t *captureTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	t.body = b
	req.Body = io.NopCloser(bytes.NewReader(b))
	return t.RoundTripper.RoundTrip(req)
}

// TestResponsesSubjectsSendTheSameRequest checks that steady and openai-go send the same
// Responses request, field for field, so that the benchmarks compare the same work.
func TestResponsesSubjectsSendTheSameRequest(t *testing.T) {
	var sent []map[string]any
	for _, stream := range []bool{false, true} {
		sent = sent[:0]
		for i := range 2 {
			ct := &captureTransport{RoundTripper: jsonWire(responsesAnswer)}
			if stream {
				ct.RoundTripper = eventWire(responsesStream)
			}
			s := responsesSubjects(ct)[i]
			var err error
			if stream {
				_, _, err = s.stream(context.Background(), nil)
			} else {
				_, err = s.chat(context.Background())
			}
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			var v map[string]any
			if err := json.Unmarshal(ct.body, &v); err != nil {
				t.Fatalf("%s: %v: %s", s.name, err, ct.body)
			}
			sent = append(sent, v)
		}
		if !reflect.DeepEqual(sent[0], sent[1]) {
			t.Errorf("stream %t: steady sent %v\nopenai-go sent %v", stream, sent[0], sent[1])
		}
	}
}
