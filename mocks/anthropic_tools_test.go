package mocks_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/steadyllm/steady/mocks"
)

const searchBody = `{"model":"claude-sonnet-4-5","max_tokens":512,"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":3}],` +
	`"messages":[{"role":"user","content":"What is new?"}]}`

func TestCountTokens_CountsWhatTheAnswerBillsAndRefusesTheRest(t *testing.T) {
	s := newServer(t, mocks.WithRateLimits(mocks.RateLimits{RequestsPerMinute: 1}))
	count := strings.Replace(messagesBody, `"max_tokens":256,`, "", 1)
	for range 3 { // no rate limit of its own: the messages' one request a minute is not spent
		res, b := mustDo(t, s, http.MethodPost, "/v1/messages/count_tokens", anthropicHeaders(), count)
		if res.StatusCode != http.StatusOK || path(decode(t, b), "input_tokens") != float64(mocks.Tokens("Be brief.")+mocks.Tokens("Hello Claude")) {
			t.Fatalf("%d %s", res.StatusCode, b)
		}
	}
	res, b := mustDo(t, s, http.MethodPost, "/v1/messages/count_tokens", anthropicHeaders(), messagesBody)
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "max_tokens: Extra inputs are not permitted") {
		t.Fatalf("a count with max_tokens: %d %s", res.StatusCode, b)
	}
	// Its route has scripts of its own.
	s.RouteScript(mocks.RouteCountTokens, mocks.Overloaded())
	if res, _ := mustDo(t, s, http.MethodPost, "/v1/messages/count_tokens", anthropicHeaders(), count); res.StatusCode != 529 {
		t.Fatalf("status %d", res.StatusCode)
	}
	if res, _ := mustDo(t, s, http.MethodPost, "/v1/messages", anthropicHeaders(), messagesBody); res.StatusCode != http.StatusOK {
		t.Fatalf("messages: status %d", res.StatusCode)
	}
}

func TestAnthropicTools_VersionedTypesAreTakenOthersRefused(t *testing.T) {
	s := newServer(t)
	withTools := func(tools string) string {
		return strings.Replace(messagesBody, `"messages"`, `"tools":`+tools+`,"messages"`, 1)
	}
	for tools, want := range map[string]int{
		`[{"type":"bash_20250124","name":"bash"},{"type":"text_editor_20250728","name":"str_replace_based_edit_tool"}]`: 200,
		`[{"type":"custom","name":"f","input_schema":{"type":"object"}},{"name":"g","input_schema":{"type":"object"}}]`: 200,
		`[{"type":"bash","name":"bash"}]`:  400,
		`[{"type":"bash_20250124"}]`:       400,
		`[{"type":"WEB_SEARCH_20250305"}]`: 400,
	} {
		res, b := mustDo(t, s, http.MethodPost, "/v1/messages", anthropicHeaders(), withTools(tools))
		if res.StatusCode != want {
			t.Errorf("%s: %d %s", tools, res.StatusCode, b)
		}
	}
}

func TestAnthropicWebSearch_AnswersWithItsBlocksAndChecksThemOnTheNextTurn(t *testing.T) {
	s := newServer(t)
	res, b := mustDo(t, s, http.MethodPost, "/v1/messages", anthropicHeaders(), searchBody)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
	var answer struct {
		Content []json.RawMessage `json:"content"`
		Usage   struct {
			ServerToolUse struct {
				WebSearchRequests int `json:"web_search_requests"`
			} `json:"server_tool_use"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &answer); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, c := range answer.Content {
		types = append(types, path(decode(t, c), "type").(string))
	}
	if strings.Join(types, " ") != "text server_tool_use web_search_tool_result text" || answer.Usage.ServerToolUse.WebSearchRequests != 1 {
		t.Fatalf("content %s", b)
	}
	if path(decode(t, answer.Content[1]), "input", "query") != "What is new?" || path(decode(t, answer.Content[3]), "citations", 0, "type") != "web_search_result_location" {
		t.Fatalf("content %s", b)
	}
	// The same question is the same search.
	if _, again := mustDo(t, s, http.MethodPost, "/v1/messages", anthropicHeaders(), searchBody); !strings.Contains(string(again), string(answer.Content[2])) {
		t.Fatal("two searches for one question differ")
	}

	turn := func(content ...json.RawMessage) (int, string) {
		blocks, _ := json.Marshal(content)
		body := strings.Replace(searchBody, `{"role":"user","content":"What is new?"}`,
			`{"role":"user","content":"What is new?"},{"role":"assistant","content":`+string(blocks)+`},{"role":"user","content":"More?"}`, 1)
		res, b := mustDo(t, s, http.MethodPost, "/v1/messages", anthropicHeaders(), body)
		return res.StatusCode, string(b)
	}
	if st, b := turn(answer.Content...); st != http.StatusOK {
		t.Fatalf("the answer sent back whole: %d %s", st, b)
	}
	if st, b := turn(answer.Content[0], answer.Content[2], answer.Content[3]); st != http.StatusBadRequest || !strings.Contains(b, "must follow the `server_tool_use`") {
		t.Fatalf("a result without its call: %d %s", st, b)
	}
	tampered := json.RawMessage(strings.Replace(string(answer.Content[2]), `"encrypted_content":"`, `"encrypted_content":"x`, 1))
	if st, b := turn(answer.Content[0], answer.Content[1], tampered, answer.Content[3]); st != http.StatusBadRequest || !strings.Contains(b, "invalid encrypted content") {
		t.Fatalf("a tampered result: %d %s", st, b)
	}
}

func TestAnthropicWebSearch_StreamsItsBlocksAsTheAPIDoes(t *testing.T) {
	s := newServer(t)
	body := strings.Replace(searchBody, `"max_tokens":512`, `"max_tokens":512,"stream":true`, 1)
	_, evs, err := stream(t, s, "/v1/messages", anthropicHeaders(), body)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, e := range evs {
		v := decode(t, []byte(e.data))
		switch e.name {
		case "content_block_start":
			seen = append(seen, "start:"+path(v, "content_block", "type").(string))
			if path(v, "content_block", "type") == "server_tool_use" && len(path(v, "content_block", "input").(map[string]any)) != 0 {
				t.Errorf("server_tool_use starts with its input: %s", e.data)
			}
		case "content_block_delta":
			seen = append(seen, path(v, "delta", "type").(string))
		}
	}
	want := "start:text text_delta start:server_tool_use input_json_delta start:web_search_tool_result start:text citations_delta text_delta text_delta text_delta"
	if got := strings.Join(seen, " "); got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
}

func TestStepBlocks_ComeBeforeTheAnswerInEitherFormAndInScenarioFiles(t *testing.T) {
	block := json.RawMessage(`{"type":"container_upload","file_id":"file_1"}`)
	step := mocks.Reply("done").WithBlocks(block)
	s := newServer(t, mocks.WithScript(step, step))
	_, b := mustDo(t, s, http.MethodPost, "/v1/messages", anthropicHeaders(), messagesBody)
	if path(decode(t, b), "content", 0, "file_id") != "file_1" || path(decode(t, b), "content", 1, "text") != "done" {
		t.Fatalf("%s", b)
	}
	_, evs, err := stream(t, s, "/v1/messages", anthropicHeaders(), strings.Replace(messagesBody, `"max_tokens":256`, `"max_tokens":256,"stream":true`, 1))
	if err != nil {
		t.Fatal(err)
	}
	if evs[1].name != "content_block_start" || path(decode(t, []byte(evs[1].data)), "content_block", "file_id") != "file_1" ||
		path(decode(t, []byte(evs[3].data)), "index") != float64(1) {
		t.Fatalf("events %v", evs[:4])
	}
	cfg, err := mocks.ParseConfig([]byte(`{"script":[{"text":"done","blocks":[{"type":"container_upload","file_id":"file_1"}]}]}`))
	if err != nil || len(cfg.Script) != 1 || string(cfg.Script[0].Blocks[0]) != string(block) {
		t.Fatalf("%+v %v", cfg, err)
	}
	if _, err := mocks.ParseConfig([]byte(`{"script":[{"blocks":[[1]]}]}`)); err == nil || !strings.Contains(err.Error(), "blocks[0]") {
		t.Fatalf("a block that is no object: %v", err)
	}
}
