package mocks

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Anthropic's tools beyond function tools, as far as the fake needs them: tools defined by a
// versioned type (server tools such as web_search_20250305, client tools such as bash_20250124),
// a web search the fake runs itself, the blocks it answers with (server_tool_use,
// web_search_tool_result, a text with citations), and the checks the API makes when those
// blocks come back on the next turn. Token counting (POST /v1/messages/count_tokens) answers
// the prompt tokens the fake's answers report as input_tokens.

// anthropicTool is a tool of a Messages request: a custom tool (no type, or "custom") with its
// input_schema, or one of the API's own, by its versioned type.
type anthropicTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// versioned is the shape of the API's own tool types: a name and the date of its version.
var versioned = regexp.MustCompile(`^[a-z][a-z0-9_]*_[0-9]{8}$`)

// checkTools refuses, as the API does, a tool without a name and a type that is neither a
// custom tool's nor a versioned one.
func checkTools(tools []anthropicTool) error {
	for i, t := range tools {
		switch {
		case t.Name == "":
			return invalidParam(fmt.Sprintf("tools.%d.name", i), fmt.Sprintf("tools.%d.name: Field required", i))
		case t.Type != "" && t.Type != "custom" && !versioned.MatchString(t.Type):
			return invalidParam(fmt.Sprintf("tools.%d.type", i),
				fmt.Sprintf("tools.%d: Input tag '%s' found using 'type' does not match any of the expected tags", i, t.Type))
		}
	}
	return nil
}

// searchTool returns the name of the request's web search tool (a server tool of type
// web_search_YYYYMMDD), "" for none: with one, the fake's answer searches first.
func searchTool(tools []anthropicTool) string {
	for _, t := range tools {
		if strings.HasPrefix(t.Type, "web_search_") {
			return t.Name
		}
	}
	return ""
}

// countOnly refuses, as count_tokens does, the fields of a Messages request that do not make
// the prompt.
func countOnly(body []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return fmt.Errorf("invalid JSON body: %v", err)
	}
	for _, f := range []string{"max_tokens", "stream", "temperature", "top_p", "top_k", "stop_sequences", "metadata", "service_tier"} {
		if _, ok := fields[f]; ok {
			return invalidParam(f, f+": Extra inputs are not permitted")
		}
	}
	return nil
}

// contentBlock is a block of a request's message, as far as the fake checks it.
type contentBlock struct {
	Type      string          `json:"type"`
	Source    json.RawMessage `json:"source"`
	ID        string          `json:"id"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

// checkServerBlocks refuses, as the API does, server tool blocks of message i that do not come
// back as they were sent: a server tool's result without the server_tool_use it answers
// before it in the message, and search results whose encrypted content is not the fake's.
func checkServerBlocks(i int, blocks []contentBlock) error {
	var uses map[string]bool
	for j, b := range blocks {
		switch {
		case b.Type == "server_tool_use":
			if b.ID == "" {
				return invalidParam(fmt.Sprintf("messages.%d.content.%d.id", i, j), fmt.Sprintf("messages.%d.content.%d.id: Field required", i, j))
			}
			if uses == nil {
				uses = map[string]bool{}
			}
			uses[b.ID] = true
		case strings.HasSuffix(b.Type, "_tool_result") && b.Type != "tool_result" && b.Type != "mcp_tool_result":
			at := fmt.Sprintf("messages.%d.content.%d", i, j)
			if !uses[b.ToolUseID] {
				return invalidParam(at, fmt.Sprintf("%s: `%s` block with tool_use_id %q must follow the `server_tool_use` block it answers",
					at, b.Type, b.ToolUseID))
			}
			if b.Type == "web_search_tool_result" {
				if err := checkSearchResults(at, b.Content); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkSearchResults refuses search results (a web_search_tool_result's content) whose
// encrypted content is not what the fake wrote for their URL.
func checkSearchResults(at string, content json.RawMessage) error {
	if t := bytes.TrimSpace(content); len(t) == 0 || t[0] != '[' {
		return nil // an error result: {"type":"web_search_tool_result_error",…}
	}
	var results []struct {
		URL              string `json:"url"`
		EncryptedContent string `json:"encrypted_content"`
	}
	if json.Unmarshal(content, &results) != nil {
		return invalidParam(at+".content", at+".content: Input should be a valid list of web search results")
	}
	for k, r := range results {
		if r.EncryptedContent != encryptedFor(r.URL) {
			return invalidParam(fmt.Sprintf("%s.content.%d.encrypted_content", at, k),
				fmt.Sprintf("%s.content.%d.encrypted_content: invalid encrypted content", at, k))
		}
	}
	return nil
}

// encryptedFor is the fake's "encrypted" content of the search result at url: opaque to a
// client, and checked when it comes back.
func encryptedFor(url string) string {
	return base64.StdEncoding.EncodeToString([]byte("steady-fake-search|" + url))
}

// searchIntro is the text the fake's answer opens with before it searches.
const searchIntro = "Let me search for that."

// search is what the fake's web search answers for query: the server_tool_use block, its
// web_search_tool_result, and the citation the answer's text carries.
type search struct {
	use, result, citation obj
	query                 string
}

// newSearch returns the search the tool called name runs for query. It depends on the query
// alone, not on the call, so that two clients asking the same question get the same blocks
// and their next turns can be compared.
func newSearch(name, query string) search {
	sum := sha256.Sum256([]byte(query))
	key := hex.EncodeToString(sum[:8])
	id := "srvtoolu_fake" + key
	results := make([]obj, 2)
	for k := range results {
		url := fmt.Sprintf("https://search.example/%s/%d", key, k+1)
		results[k] = obj{"type": "web_search_result", "url": url, "title": fmt.Sprintf("Result %d", k+1),
			"encrypted_content": encryptedFor(url), "page_age": "May 1, 2026"}
	}
	cited := query
	if len(cited) > 40 {
		cited = cited[:40]
	}
	return search{
		use:    obj{"type": "server_tool_use", "id": id, "name": name, "input": obj{"query": query}},
		result: obj{"type": "web_search_tool_result", "tool_use_id": id, "content": results},
		citation: obj{"type": "web_search_result_location", "url": results[0]["url"], "title": results[0]["title"],
			"encrypted_index": base64.StdEncoding.EncodeToString([]byte("index|0")), "cited_text": cited},
		query: query,
	}
}

// streamBlocks sends, from content block *at on, the blocks an answer holds before its own:
// the step's Blocks, each whole in its content_block_start, then a search's text, its
// server_tool_use (the input in an input_json_delta, as the API streams it) and its result.
// It advances *at past them and reports false when the stream ended.
func (c *call) streamBlocks(sw *sseWriter, blocks []json.RawMessage, srch *search, at *int) bool {
	open := func(block any) bool {
		if *at == 0 {
			return sw.open("content_block_start", obj{"type": "content_block_start", "index": *at, "content_block": block})
		}
		return sw.send("content_block_start", obj{"type": "content_block_start", "index": *at, "content_block": block})
	}
	stop := func() bool {
		ok := sw.send("content_block_stop", obj{"type": "content_block_stop", "index": *at})
		*at++
		return ok
	}
	delta := func(d obj) obj { return obj{"type": "content_block_delta", "index": *at, "delta": d} }
	for _, b := range blocks {
		if !open(b) || !stop() {
			return false
		}
	}
	if srch == nil {
		return true
	}
	input, _ := json.Marshal(srch.use["input"])
	use := obj{}
	for k, v := range srch.use {
		use[k] = v
	}
	use["input"] = obj{}
	return open(obj{"type": "text", "text": ""}) && sw.delta("content_block_delta", delta(obj{"type": "text_delta", "text": searchIntro})) && stop() &&
		open(use) && sw.send("content_block_delta", delta(obj{"type": "input_json_delta", "partial_json": string(input)})) && stop() &&
		open(srch.result) && stop()
}

// WithBlocks returns a copy of st whose Anthropic answer holds blocks before its own (see
// [Step.Blocks]).
func (st Step) WithBlocks(blocks ...json.RawMessage) Step {
	st.Blocks = append(append([]json.RawMessage(nil), st.Blocks...), blocks...)
	return st
}
