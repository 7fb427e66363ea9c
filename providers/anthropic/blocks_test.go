package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
)

// Tools by versioned type and the blocks the neutral message does not model: passed through,
// kept verbatim, sent back where they stood.

const webSearch = `{"type":"web_search_20250305","name":"web_search","max_uses":5}`

// searchIntro is the text the fake's answer opens with before it searches.
const searchIntro = "Let me search for that."

func searchRequest(question string) *providers.ChatRequest {
	return &providers.ChatRequest{
		Messages: []providers.Message{{Role: providers.RoleUser, Content: question}},
		Tools:    []providers.Tool{{System: providers.SystemAnthropic, Raw: json.RawMessage(webSearch)}},
	}
}

// jsonOf decodes raw, failing the test when it is not JSON.
func jsonOf(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, raw)
	}
	return v
}

// sentBody returns the body of the i-th request the fake received, decoded.
func sentBody(t *testing.T, s *mocks.Server, i int) map[string]any {
	t.Helper()
	reqs := s.Journal().Requests()
	if len(reqs) <= i {
		t.Fatalf("%d requests, want more than %d", len(reqs), i)
	}
	return jsonOf(t, reqs[i].Body).(map[string]any)
}

// checkSearchBlocks fails unless blocks are the fake's search for question, marked with origin,
// standing after the intro and before any tool call.
func checkSearchBlocks(t *testing.T, blocks []providers.ProviderBlock, question, origin string) {
	t.Helper()
	if len(blocks) != 2 || blocks[0].Type != "server_tool_use" || blocks[1].Type != "web_search_tool_result" {
		t.Fatalf("provider blocks %+v", blocks)
	}
	for _, b := range blocks {
		if b.Origin != origin || b.At != len(searchIntro) || b.Calls != 0 {
			t.Errorf("block %s: origin %q at %d, %d calls; want %q at %d", b.Type, b.Origin, b.At, b.Calls, origin, len(searchIntro))
		}
	}
	use := jsonOf(t, blocks[0].Raw).(map[string]any)
	if in, _ := use["input"].(map[string]any); in["query"] != question || use["name"] != "web_search" {
		t.Errorf("server_tool_use %s", blocks[0].Raw)
	}
	result := jsonOf(t, blocks[1].Raw).(map[string]any)
	if result["tool_use_id"] != use["id"] || len(result["content"].([]any)) != 2 {
		t.Errorf("web_search_tool_result %s", blocks[1].Raw)
	}
}

// nextTurn is the conversation after answer, with one more question.
func nextTurn(first *providers.ChatRequest, answer providers.Message, question string) *providers.ChatRequest {
	req := *first
	req.Messages = append(append(append([]providers.Message(nil), first.Messages...), answer),
		providers.Message{Role: providers.RoleUser, Content: question})
	return &req
}

// assistantContent returns the content blocks of the assistant turn of a sent body.
func assistantContent(t *testing.T, body map[string]any) []any {
	t.Helper()
	for _, m := range body["messages"].([]any) {
		if m := m.(map[string]any); m["role"] == "assistant" {
			return m["content"].([]any)
		}
	}
	t.Fatalf("no assistant turn in %v", body)
	return nil
}

func TestChat_ServerToolBlocksAreKeptAndSentBackWhereTheyStood(t *testing.T) {
	f := newFixture(t)
	req := searchRequest("What is new?")
	resp, err := f.p.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if want := searchIntro + "What is new?"; resp.Message.Content != want {
		t.Fatalf("content %q, want %q", resp.Message.Content, want)
	}
	checkSearchBlocks(t, resp.Message.ProviderBlocks, "What is new?", f.p.SharingScope())
	// The tool went as it was given.
	sent := sentBody(t, f.s, 0)
	if tools := sent["tools"].([]any); len(tools) != 1 || !reflect.DeepEqual(tools[0], jsonOf(t, []byte(webSearch))) {
		t.Fatalf("tools sent: %v", sent["tools"])
	}

	// The next turn carries the search back as it came (the fake refuses it otherwise), between
	// the two texts it stood between.
	if _, err := f.p.Chat(context.Background(), nextTurn(req, resp.Message, "And then?")); err != nil {
		t.Fatal(err)
	}
	content := assistantContent(t, sentBody(t, f.s, 1))
	if len(content) != 4 {
		t.Fatalf("assistant turn %v", content)
	}
	wantText := func(i int, text string) {
		if b := content[i].(map[string]any); b["type"] != "text" || b["text"] != text {
			t.Errorf("block %d: %v, want the text %q", i, b, text)
		}
	}
	wantText(0, searchIntro)
	wantText(3, "What is new?")
	for i, b := range resp.Message.ProviderBlocks {
		if !reflect.DeepEqual(content[i+1], jsonOf(t, b.Raw)) {
			t.Errorf("block %d went back as %v, not as it came: %s", i+1, content[i+1], b.Raw)
		}
	}

	// A search that does not come back as it was is the API's 400 (the proof that the fake
	// checks what the test relies on).
	msg := resp.Message
	msg.ProviderBlocks = append([]providers.ProviderBlock(nil), msg.ProviderBlocks...)
	msg.ProviderBlocks[1].Raw = json.RawMessage(strings.Replace(string(msg.ProviderBlocks[1].Raw), `"encrypted_content":"`, `"encrypted_content":"x`, 1))
	_, err = f.p.Chat(context.Background(), nextTurn(req, msg, "And then?"))
	if e := asError(t, err); e.Kind != providers.KindBadRequest || !strings.Contains(e.Message, "encrypted") {
		t.Fatalf("a tampered search: %#v", e)
	}
}

func TestChatStream_ServerToolBlocksAreKeptWithTheirStreamedInput(t *testing.T) {
	f := newFixture(t)
	req := searchRequest("What is new?")
	deltas, err := streamOf(t, f.p, req)
	if err != nil {
		t.Fatal(err)
	}
	last := deltas[len(deltas)-1]
	if want := searchIntro + "What is new?"; textOf(deltas) != want || !last.Done {
		t.Fatalf("text %q, last %+v; want %q", textOf(deltas), last, want)
	}
	// The start event gave server_tool_use an empty input, the deltas its query.
	checkSearchBlocks(t, last.ProviderBlocks, "What is new?", f.p.SharingScope())
	for _, d := range deltas[:len(deltas)-1] {
		if d.ProviderBlocks != nil {
			t.Fatalf("provider blocks before the Done delta: %+v", d)
		}
	}
	// Sent back, they are what the answer was.
	answer := providers.Message{Role: providers.RoleAssistant, Content: textOf(deltas), ProviderBlocks: last.ProviderBlocks}
	if _, err := streamOf(t, f.p, nextTurn(req, answer, "And then?")); err != nil {
		t.Fatal(err)
	}
	if content := assistantContent(t, sentBody(t, f.s, 1)); len(content) != 4 {
		t.Fatalf("assistant turn %v", content)
	}
}

// future is a block of a type this module cannot know, whose fields clash with those it reads.
const future = `{"type":"future_block_20270101","text":5,"data":{"x":[1,2]},"id":null}`

func TestChatAndStream_AnUnknownBlockIsKeptVerbatimWhateverItHolds(t *testing.T) {
	step := mocks.Reply("done").WithBlocks(json.RawMessage(future))
	f := newFixture(t, mocks.WithScript(step, step))
	resp, err := f.p.Chat(context.Background(), userRequest("Hi"))
	if err != nil {
		t.Fatal(err)
	}
	deltas, err := streamOf(t, f.p, userRequest("Hi"))
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]struct {
		text   string
		blocks []providers.ProviderBlock
	}{"chat": {resp.Message.Content, resp.Message.ProviderBlocks}, "stream": {textOf(deltas), deltas[len(deltas)-1].ProviderBlocks}} {
		if got.text != "done" || len(got.blocks) != 1 || got.blocks[0].Type != "future_block_20270101" || got.blocks[0].At != 0 ||
			!reflect.DeepEqual(jsonOf(t, got.blocks[0].Raw), jsonOf(t, []byte(future))) {
			t.Errorf("%s: text %q, blocks %+v", name, got.text, got.blocks)
		}
	}
	// Back it goes, before the text, as it came.
	if _, err := f.p.Chat(context.Background(), nextTurn(userRequest("Hi"), resp.Message, "More?")); err != nil {
		t.Fatal(err)
	}
	content := assistantContent(t, sentBody(t, f.s, 2))
	if len(content) != 2 || !reflect.DeepEqual(content[0], jsonOf(t, []byte(future))) || content[1].(map[string]any)["text"] != "done" {
		t.Fatalf("assistant turn %v", content)
	}
}

func TestChat_ProviderBlocksOfAnotherOriginAreDropped(t *testing.T) {
	f := newFixture(t)
	block := providers.ProviderBlock{Type: "future_block_20270101", Raw: json.RawMessage(future), At: 3}
	turn := func(origin string) []any {
		t.Helper()
		b := block
		b.Origin = origin
		msg := providers.Message{Role: providers.RoleAssistant, Content: "one two", ProviderBlocks: []providers.ProviderBlock{b}}
		if _, err := f.p.Chat(context.Background(), nextTurn(userRequest("Hi"), msg, "More?")); err != nil {
			t.Fatal(err)
		}
		reqs := f.s.Journal().Requests()
		return assistantContent(t, jsonOf(t, reqs[len(reqs)-1].Body).(map[string]any))
	}
	// Another endpoint's block: the text alone, whole.
	if content := turn("another-origin"); len(content) != 1 || content[0].(map[string]any)["text"] != "one two" {
		t.Errorf("another origin's block was sent: %v", content)
	}
	// Its own, or one that claims no origin: where it stood, splitting the text.
	for _, origin := range []string{f.p.SharingScope(), ""} {
		content := turn(origin)
		if len(content) != 3 || content[0].(map[string]any)["text"] != "one" ||
			content[1].(map[string]any)["type"] != "future_block_20270101" || content[2].(map[string]any)["text"] != " two" {
			t.Errorf("origin %q: %v", origin, content)
		}
	}
}

func TestChat_ABlockPlacedInsideACharacterSplitsBeforeIt(t *testing.T) {
	f := newFixture(t)
	// "é" is two bytes: At 2 falls inside it; a place past the text or the calls means the end.
	msg := providers.Message{Role: providers.RoleAssistant, Content: "aé", ToolCalls: []providers.ToolCall{{ID: "toolu_1", Name: "f", Arguments: "{}"}},
		Cache: providers.Cache5m, ProviderBlocks: []providers.ProviderBlock{
			{Type: "x_20270101", Raw: json.RawMessage(`{"type":"x_20270101"}`), At: 2},
			{Type: "y_20270101", Raw: json.RawMessage(`{"type":"y_20270101"}`), At: 99, Calls: 99}}}
	req := nextTurn(userRequest("Hi"), msg, "More?")
	req.Messages[2] = providers.Message{Role: providers.RoleTool, ToolCallID: "toolu_1", Content: "ok"}
	req.Tools = []providers.Tool{{Name: "f"}}
	if _, err := f.p.Chat(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	content := assistantContent(t, sentBody(t, f.s, 0))
	var types []string
	for _, b := range content {
		types = append(types, b.(map[string]any)["type"].(string))
	}
	if strings.Join(types, " ") != "text x_20270101 text tool_use y_20270101" ||
		content[0].(map[string]any)["text"] != "a" || content[2].(map[string]any)["text"] != "é" {
		t.Fatalf("assistant turn %v", content)
	}
	// The message's cache mark lands on its last block, raw as it is.
	if cc, _ := content[4].(map[string]any)["cache_control"].(map[string]any); cc["type"] != "ephemeral" || cc["ttl"] != "5m" {
		t.Fatalf("last block %v", content[4])
	}
}

func TestChat_ARawToolOfAnotherSystemIsRefusedBeforeSending(t *testing.T) {
	f := newFixture(t)
	req := userRequest("Hi")
	req.Tools = []providers.Tool{{System: providers.SystemOpenAI, Raw: json.RawMessage(`{"type":"web_search"}`)}}
	_, err := f.p.Chat(context.Background(), req)
	if e := asError(t, err); e.Kind != providers.KindBadRequest || !strings.Contains(e.Message, "web_search") || f.s.Journal().Len() != 0 {
		t.Fatalf("%#v, %d requests", e, f.s.Journal().Len())
	}
	// A type the API does not know is the API's to refuse: sent as it is.
	req.Tools = []providers.Tool{{System: providers.SystemAnthropic, Raw: json.RawMessage(`{"type":"nonsense","name":"x"}`)}}
	_, err = f.p.Chat(context.Background(), req)
	if e := asError(t, err); e.Kind != providers.KindBadRequest || f.s.Journal().Len() != 1 {
		t.Fatalf("%#v", e)
	}
}

func TestChat_ClientToolsByVersionedTypeAreCalledByName(t *testing.T) {
	f := newFixture(t, mocks.WithScript(mocks.CallTool("bash", `{"command":"ls"}`)))
	req := userRequest("List the files.")
	req.Tools = []providers.Tool{{System: providers.SystemAnthropic, Raw: json.RawMessage(`{"type":"bash_20250124","name":"bash"}`)}}
	req.ToolChoice = providers.ToolChoice{Mode: providers.ToolChoiceTool, Name: "bash"}
	resp, err := f.p.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if tc := resp.Message.ToolCalls; len(tc) != 1 || tc[0].Name != "bash" || tc[0].Arguments != `{"command":"ls"}` || resp.Message.ProviderBlocks != nil {
		t.Fatalf("%+v", resp.Message)
	}
	if c := sentBody(t, f.s, 0)["tool_choice"].(map[string]any); c["type"] != "tool" || c["name"] != "bash" {
		t.Fatalf("tool_choice %v", c)
	}
}

func TestChatStream_KeptBlocksAreBoundedByMaxResponseBytes(t *testing.T) {
	big := json.RawMessage(`{"type":"future_block_20270101","blob":"` + strings.Repeat("x", 2000) + `"}`)
	f := newFixtureWith(t, func(c *anthropic.Config) { c.Limits.MaxResponseBytes = 1000 },
		mocks.WithScript(mocks.Reply("done").WithBlocks(big)))
	_, err := streamOf(t, f.p, userRequest("Hi"))
	e := asError(t, err)
	var le *providers.LimitError
	if e.Kind != providers.KindUnavailable || !errors.As(err, &le) || le.Limit != "MaxResponseBytes" {
		t.Fatalf("%#v", e)
	}
}

// An answer made of another origin's blocks alone leaves nothing to send: the turn is dropped,
// and the user turns around it merge, instead of an empty turn the API would refuse.
func TestChat_AnAnswerOfAnotherOriginsBlocksAloneIsDropped(t *testing.T) {
	f := newFixture(t)
	msg := providers.Message{Role: providers.RoleAssistant, ProviderBlocks: []providers.ProviderBlock{
		{Type: "future_block_20270101", Raw: json.RawMessage(future), Origin: "another-origin"}}}
	if _, err := f.p.Chat(context.Background(), nextTurn(userRequest("Hi"), msg, "More?")); err != nil {
		t.Fatal(err)
	}
	msgs := sentBody(t, f.s, 0)["messages"].([]any)
	if len(msgs) != 1 || len(msgs[0].(map[string]any)["content"].([]any)) != 2 {
		t.Fatalf("messages %v", msgs)
	}
}

// Tiny blocks cannot multiply past a bound: each counts a fixed overhead against
// MaxResponseBytes, and a stream keeps at most 10,000. (Deltas find their block in one lookup,
// so a server's many deltas to many kept blocks cost linear time, not quadratic.)
func TestChatStream_ManyTinyKeptBlocksAreBounded(t *testing.T) {
	tiny := json.RawMessage(`{"type":"x"}`)
	blocks := make([]json.RawMessage, 10_001)
	for i := range blocks {
		blocks[i] = tiny
	}
	t.Run("overhead", func(t *testing.T) {
		// 100 blocks of 12 bytes are 1,200 bytes, under the limit; with their overhead they exceed it.
		f := newFixtureWith(t, func(c *anthropic.Config) { c.Limits.MaxResponseBytes = 10_000 },
			mocks.WithScript(mocks.Reply("done").WithBlocks(blocks[:100]...)))
		_, err := streamOf(t, f.p, userRequest("Hi"))
		var le *providers.LimitError
		if e := asError(t, err); e.Kind != providers.KindUnavailable || !errors.As(err, &le) {
			t.Fatalf("%#v", e)
		}
	})
	t.Run("count", func(t *testing.T) {
		f := newFixture(t, mocks.WithScript(mocks.Reply("done").WithBlocks(blocks...)))
		_, err := streamOf(t, f.p, userRequest("Hi"))
		if e := asError(t, err); e.Kind != providers.KindUnavailable || !strings.Contains(e.Message, "10000 blocks") {
			t.Fatalf("%#v", e)
		}
	})
}
