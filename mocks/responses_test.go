package mocks_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/steadyllm/steady/mocks"
)

const responsesBody = `{"model":"gpt-4o-mini","input":[{"type":"message","role":"system","content":"Be brief."},` +
	`{"type":"message","role":"user","content":[{"type":"input_text","text":"Say hello"}]}]}`

func TestResponses_AnswersAResponseObject(t *testing.T) {
	s := newServer(t)
	res, b := mustDo(t, s, http.MethodPost, "/v1/responses", openAIHeaders(), responsesBody)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, b)
	}
	v := decode(t, b)
	if path(v, "object") != "response" || path(v, "status") != "completed" || path(v, "id") != "resp_fake0000000000000001" ||
		path(v, "output", 0, "type") != "message" || path(v, "output", 0, "content", 0, "type") != "output_text" ||
		path(v, "output", 0, "content", 0, "text") != "Say hello" {
		t.Fatalf("%s", b)
	}
	if path(v, "usage", "input_tokens") != float64(mocks.Tokens("Be brief.")+mocks.Tokens("Say hello")) ||
		path(v, "usage", "output_tokens") != float64(mocks.Tokens("Say hello")) || path(v, "usage", "total_tokens") == nil {
		t.Fatalf("usage %v", path(v, "usage"))
	}
	if res.Header.Get("X-Request-Id") == "" || res.Header.Get("X-Ratelimit-Remaining-Tokens") == "" {
		t.Fatalf("headers %v", res.Header)
	}
}

func TestResponses_StreamEventsAreNumberedInOrder(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.CallTool("f", `{"a":"`+strings.Repeat("x", 40)+`"}`)))
	body := `{"model":"m","stream":true,"reasoning":{"effort":"low","summary":"auto"},"include":["reasoning.encrypted_content"],"input":"think"}`
	_, evs, err := stream(t, s, "/v1/responses", openAIHeaders(), body)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for i, e := range evs {
		v := decode(t, []byte(e.data))
		if path(v, "type") != e.name || path(v, "sequence_number") != float64(i) {
			t.Fatalf("event %d: %s %s", i, e.name, e.data)
		}
		if len(kinds) == 0 || kinds[len(kinds)-1] != e.name {
			kinds = append(kinds, e.name)
		}
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.reasoning_summary_part.added",
		"response.reasoning_summary_text.delta", "response.reasoning_summary_text.done", "response.reasoning_summary_part.done",
		"response.output_item.done", "response.output_item.added", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done", "response.completed"}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Fatalf("events %v", kinds)
	}
	for _, e := range evs {
		v := decode(t, []byte(e.data))
		if e.name != "response.output_item.done" || path(v, "item", "type") != "reasoning" {
			continue
		}
		if enc, _ := path(v, "item", "encrypted_content").(string); !strings.HasPrefix(enc, "enc_fake_") {
			t.Fatalf("the reasoning item's done event carries no encrypted content: %s", e.data)
		}
	}
	last := decode(t, []byte(evs[len(evs)-1].data))
	if path(last, "response", "output", 1, "call_id") != "call_00000001" || path(last, "response", "usage", "output_tokens_details", "reasoning_tokens") == float64(0) {
		t.Fatalf("completed %s", evs[len(evs)-1].data)
	}
}

func TestResponses_RefusesWhatTheAPIRefuses(t *testing.T) {
	s := newServer(t)
	item := func(s string) string { return `{"model":"m","input":[` + s + `]}` }
	for _, tc := range []struct {
		body, param string
		status      int
	}{
		{`{"model":"m","max_output_tokens":8,"input":"hi"}`, "max_output_tokens", 400},
		{`{"model":"m","temperature":3,"input":"hi"}`, "temperature", 400},
		{`{"input":"hi"}`, "model", 400},
		{`{"model":"m"}`, "input", 400},
		{item(`{"type":"mystery"}`), "input[0].type", 400},
		{item(`{"type":"message","role":"robot","content":"x"}`), "input[0].role", 400},
		{item(`{"type":"function_call_output","output":"x"}`), "input[0].call_id", 400},
		{item(`{"type":"function_call","call_id":"c","name":"f"}`), "input[0]", 400},
		{item(`{"type":"message","role":"user","content":[{"type":"input_image","image_url":"ftp://x"}]}`), "input[0].content[0].image_url", 400},
		{`{"model":"m","previous_response_id":"resp_nope","input":"hi"}`, "previous_response_id", 400},
		{item(`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"someone else's"}`), "input[0].encrypted_content", 400},
		{`{"model":"m","store":false,"input":[{"type":"reasoning","id":"rs_1","summary":[]}]}`, "input[0]", 404},
		{`{"model":"m","background":true,"store":false,"input":"hi"}`, "background", 400},
	} {
		res, b := mustDo(t, s, http.MethodPost, "/v1/responses", openAIHeaders(), tc.body)
		v := decode(t, b)
		if res.StatusCode != tc.status || path(v, "error", "param") != tc.param || path(v, "error", "type") != "invalid_request_error" {
			t.Errorf("%s: %d %s", tc.body, res.StatusCode, b)
		}
	}
}

// An answer stored is found again by its ID, and so is its reasoning item; one not stored is
// not.
func TestResponses_StoredAnswersCanBeContinued(t *testing.T) {
	s := newServer(t)
	_, b := mustDo(t, s, http.MethodPost, "/v1/responses", openAIHeaders(), `{"model":"m","reasoning":{"effort":"low"},"input":"hi"}`)
	first := decode(t, b)
	_, b = mustDo(t, s, http.MethodPost, "/v1/responses", openAIHeaders(), `{"model":"m","store":false,"input":"hi"}`)
	unstored := decode(t, b)
	next := fmt.Sprintf(`{"model":"m","previous_response_id":%q,"input":[{"type":"reasoning","id":%q,"summary":[]},{"type":"message","role":"user","content":"again"}]}`,
		path(first, "id"), path(first, "output", 0, "id"))
	if res, b := mustDo(t, s, http.MethodPost, "/v1/responses", openAIHeaders(), next); res.StatusCode != 200 ||
		path(decode(t, b), "previous_response_id") != path(first, "id") {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
	if res, _ := mustDo(t, s, http.MethodPost, "/v1/responses", openAIHeaders(),
		fmt.Sprintf(`{"model":"m","previous_response_id":%q,"input":"x"}`, path(unstored, "id"))); res.StatusCode != 400 {
		t.Fatalf("an answer stored with store false was found: %d", res.StatusCode)
	}
}

func TestResponses_AzureV1RouteAndRouteScripts(t *testing.T) {
	s := newServer(t, mocks.WithRouteScript(mocks.RouteResponses, mocks.Status(503)),
		mocks.WithRouteScript(mocks.RouteAzureResponses, mocks.Status(429)))
	res, _ := mustDo(t, s, http.MethodPost, "/v1/responses", openAIHeaders(), responsesBody)
	if res.StatusCode != 503 {
		t.Fatalf("openai route: %d", res.StatusCode)
	}
	azure := map[string]string{"Api-Key": "k", "Content-Type": "application/json"}
	if res, b := mustDo(t, s, http.MethodPost, "/openai/v1/responses", azure, responsesBody); res.StatusCode != 429 {
		t.Fatalf("azure route: %d %s", res.StatusCode, b) // no api-version: the v1 API takes none
	}
	if res, b := mustDo(t, s, http.MethodPost, "/openai/v1/responses", azure, responsesBody); res.StatusCode != 200 {
		t.Fatalf("azure: %d %s", res.StatusCode, b)
	}
	r, _ := s.Journal().Last()
	var body map[string]any
	if json.Unmarshal(r.Body, &body) != nil || body["model"] != "gpt-4o-mini" {
		t.Fatalf("journal %+v", r)
	}
}

// Azure's v1 API takes no api-version for conversations either, as for responses.
func TestResponses_AzureV1ConversationsTakeNoAPIVersion(t *testing.T) {
	s := newServer(t)
	azure := map[string]string{"Api-Key": "k", "Content-Type": "application/json"}
	res, b := mustDo(t, s, http.MethodPost, "/openai/v1/conversations", azure, `{}`)
	var conv map[string]any
	if res.StatusCode != 200 || json.Unmarshal(b, &conv) != nil || conv["object"] != "conversation" {
		t.Fatalf("create: %d %s", res.StatusCode, b)
	}
	id, _ := conv["id"].(string)
	if res, b := mustDo(t, s, http.MethodGet, "/openai/v1/conversations/"+id, azure, ""); res.StatusCode != 200 {
		t.Fatalf("read: %d %s", res.StatusCode, b)
	}
	body := fmt.Sprintf(`{"model":"gpt-4o-mini","conversation":%q,"input":"hello"}`, id)
	if res, b := mustDo(t, s, http.MethodPost, "/openai/v1/responses", azure, body); res.StatusCode != 200 {
		t.Fatalf("continue: %d %s", res.StatusCode, b)
	}
}
