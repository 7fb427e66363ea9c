package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/internal/wire"
)

// What travels verbatim: tools given in the API's own shape (providers.Tool.Raw: server tools
// such as web_search_20250305, client tools defined by a versioned type such as bash_20250124)
// and the blocks of an answer the neutral message does not model (providers.ProviderBlock:
// server_tool_use, web_search_tool_result, code_execution_tool_result, a type added to the API
// later). This package knows none of their types: it keeps what the API sent and sends back
// what it kept, so a tool version released tomorrow works today.
//
// An answer's provider blocks are marked with the provider's origin (its SharingScope) and go
// back only to a provider of that origin; any other drops them and sends the text and the tool
// calls alone (see providers/state.go). Each goes back where it stood: the text of the answer is
// split around it, as the API had split it into blocks.

// rawContent returns the content of an answer's JSON body block by block, each verbatim; nil
// when data holds none.
func rawContent(data []byte) []json.RawMessage {
	var v struct {
		Content []json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(data, &v) // decoded once already as a wireResponse: it is valid JSON
	return v.Content
}

// answerBlocks appends to blocks (the thinking blocks of assistant message i, m) the rest of
// its content: its text and its tool calls and, where they stood among them, its provider
// blocks of this provider's origin; those of another origin are dropped. Without provider
// blocks that is one text block and the tool_use blocks, as always.
func (p *Provider) answerBlocks(w *wireRequest, blocks []wireBlock, i int, m providers.Message) ([]wireBlock, error) {
	text, pos, calls := m.Content, 0, 0
	addText := func(to int) {
		if seg := text[pos:to]; seg != "" {
			blocks = append(blocks, wireBlock{Type: "text", Text: seg})
		}
		pos = to
	}
	addCalls := func(to int) error {
		for ; calls < to; calls++ {
			b, err := p.toolUse(i, m.ToolCalls[calls])
			if err != nil {
				return err
			}
			blocks = append(blocks, b)
		}
		return nil
	}
	for _, pb := range m.ProviderBlocks {
		if pb.Origin != "" && pb.Origin != p.scope {
			continue // another endpoint's: it could not read it
		}
		addText(cutAt(text, max(pb.At, pos)))
		if err := addCalls(min(max(pb.Calls, calls), len(m.ToolCalls))); err != nil {
			return nil, err
		}
		blocks, w.raw = append(blocks, wireBlock{raw: pb.Raw}), true
	}
	addText(len(text))
	if err := addCalls(len(m.ToolCalls)); err != nil {
		return nil, err
	}
	return blocks, nil
}

// cutAt returns at as a place to split text: within it, and at the start of a character.
func cutAt(text string, at int) int {
	at = min(max(at, 0), len(text))
	for at > 0 && at < len(text) && !utf8.RuneStart(text[at]) {
		at--
	}
	return at
}

// toolUse returns the tool_use block of tool call tc of message i.
func (p *Provider) toolUse(i int, tc providers.ToolCall) (wireBlock, error) {
	input := json.RawMessage(`{}`)
	if strings.TrimSpace(tc.Arguments) != "" {
		input = json.RawMessage(tc.Arguments)
	}
	if !json.Valid(input) {
		return wireBlock{}, p.badRequest(fmt.Sprintf("message %d: tool call %q: Arguments is not valid JSON", i, tc.ID))
	}
	if tc.ID == "" || tc.Name == "" {
		return wireBlock{}, p.badRequest(fmt.Sprintf("message %d: a tool call needs an ID and a Name", i))
	}
	return wireBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: input}, nil
}

// rawRequest is the body of a request with raw tools or blocks (wireRequest.raw): the request,
// its messages and tools shadowed by lists that can hold raw JSON (encoding/json takes the
// shallower of two fields of one name). Only such requests pay for the conversion.
type rawRequest struct {
	wireRequest
	Messages []rawMessage `json:"messages"`
	Tools    []any        `json:"tools,omitempty"`
}

// rawMessage is a turn whose blocks are wireBlocks or raw JSON.
type rawMessage struct {
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

// encode marshals w into a request body, its raw tools and blocks as they are.
func (p *Provider) encode(w *wireRequest) ([]byte, error) {
	var v any = w
	if w.raw {
		msgs, tools, err := rawLists(w)
		if err != nil {
			return nil, p.badRequest("encoding the request: " + err.Error())
		}
		v = &rawRequest{wireRequest: *w, Messages: msgs, Tools: tools}
	}
	body, err := json.Marshal(v)
	if err != nil {
		return nil, &providers.Error{Provider: p.name, Kind: providers.KindBadRequest, Message: "encoding the request: " + err.Error(), Err: err}
	}
	return body, nil
}

// rawLists returns the messages and the tools of w with every raw item as raw JSON.
func rawLists(w *wireRequest) ([]rawMessage, []any, error) {
	msgs := make([]rawMessage, len(w.Messages))
	for i, m := range w.Messages {
		msgs[i] = rawMessage{Role: m.Role, Content: make([]any, len(m.Content))}
		for j, b := range m.Content {
			if b.raw == nil {
				msgs[i].Content[j] = b
				continue
			}
			raw, err := withCache(b.raw, b.CacheControl)
			if err != nil {
				return nil, nil, err
			}
			msgs[i].Content[j] = raw
		}
	}
	var tools []any
	for _, t := range w.Tools {
		if t.raw != nil {
			tools = append(tools, json.RawMessage(t.raw))
		} else {
			tools = append(tools, t)
		}
	}
	return msgs, tools, nil
}

// withCache returns the raw block with its cache_control set to c (none for nil).
func withCache(raw json.RawMessage, c *wireCache) (json.RawMessage, error) {
	if c == nil {
		return raw, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("a provider block is not a JSON object: %w", err)
	}
	cc, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	obj["cache_control"] = cc
	return json.Marshal(obj)
}

// keptBlock is a block of a stream kept verbatim: the content_block of its start event, and
// the input its input_json_delta events brought (a server tool's call).
type keptBlock struct {
	index int // the content block index
	block providers.ProviderBlock
	input []byte
}

// keep starts keeping content block index, of type typ, from its content_block_start event
// (data): where it stands (the text delivered so far, the tool calls begun) and the block as
// the event gave it. Its failure is the stream's: an answer past Limits.MaxResponseBytes (each
// kept block counted with wire.BlockOverhead), or more than maxKeptBlocks blocks.
func (s *stream) keep(index int, typ string, data []byte) *providers.Error {
	var ev struct {
		ContentBlock json.RawMessage `json:"content_block"`
	}
	_ = json.Unmarshal(data, &ev) // decoded once already: it is valid JSON
	if len(s.kept) >= maxKeptBlocks {
		return &providers.Error{Kind: providers.KindUnavailable,
			Message: fmt.Sprintf("the answer holds more than %d blocks to keep for the next turn", maxKeptBlocks)}
	}
	if e := s.grow(wire.BlockOverhead + len(ev.ContentBlock)); e != nil {
		return e
	}
	if s.keptAt == nil {
		s.keptAt = make(map[int]int)
	}
	s.keptAt[index] = len(s.kept)
	s.kept = append(s.kept, keptBlock{index: index, block: providers.ProviderBlock{Type: typ, Raw: ev.ContentBlock,
		Origin: s.p.scope, At: s.partial.Len(), Calls: len(s.tools)}})
	return nil
}

// maxKeptBlocks bounds the blocks a stream keeps: a real answer holds a few server tool calls
// and results; a server that sends more is refused before their number costs anything.
const maxKeptBlocks = 10_000

// keepInput adds a fragment of input to the kept block index, if it is one. It finds the block
// by its index in one lookup, however many are kept.
func (s *stream) keepInput(index int, fragment string) *providers.Error {
	i, ok := s.keptAt[index]
	if !ok {
		return nil
	}
	if e := s.grow(len(fragment)); e != nil {
		return e
	}
	k := &s.kept[i]
	k.input = append(k.input, fragment...)
	return nil
}

// grow counts n more bytes kept, failing past Limits.MaxResponseBytes: what the stream keeps
// of an answer is bounded as a whole answer is, together with what it delivers.
func (s *stream) grow(n int) *providers.Error {
	if err := s.answer.Take(n); err != nil {
		return s.p.errs.TooLong(err)
	}
	return nil
}

// keptBlocks returns the kept blocks, each with the input its deltas brought in place of the
// empty one its start event had (an input cut short, which a complete answer never has, stays
// as the start gave it); nil for none.
func (s *stream) keptBlocks() []providers.ProviderBlock {
	if len(s.kept) == 0 {
		return nil
	}
	out := make([]providers.ProviderBlock, len(s.kept))
	for i, k := range s.kept {
		out[i] = k.block
		if len(k.input) == 0 || !json.Valid(k.input) {
			continue
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(k.block.Raw, &obj) != nil {
			continue
		}
		obj["input"] = k.input
		if raw, err := json.Marshal(obj); err == nil {
			out[i].Raw = raw
		}
	}
	return out
}

// modeled reports whether blocks of type typ map to the neutral message, and so must have the
// shape this package reads; any other type is kept whatever its fields hold.
func modeled(typ string) bool {
	switch typ {
	case "text", "tool_use", "thinking", "redacted_thinking":
		return true
	}
	return false
}

// decodeAnswer decodes the JSON body of an answer into w. A block of a type this package does
// not model may hold, under a name it reads ("text", "data"…), a value of another shape: such
// a block is kept verbatim (see fromResponse), not refused, so its fields are not read at all.
func decodeAnswer(data []byte, w *wireResponse) error {
	err := json.Unmarshal(data, w)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err
	}
	// The slow path, for such an answer only: the blocks one by one.
	var raw struct {
		Content []json.RawMessage `json:"content"`
	}
	if json.Unmarshal(data, &raw) != nil {
		return err
	}
	content := make([]respBlock, len(raw.Content))
	for i, b := range raw.Content {
		var head struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(b, &head) != nil {
			return err
		}
		if !modeled(head.Type) {
			content[i] = respBlock{Type: head.Type}
		} else if e := json.Unmarshal(b, &content[i]); e != nil {
			return e
		}
	}
	w.Content = nil
	var rest struct {
		wireResponse
		Content json.RawMessage `json:"content"` // read above
	}
	if e := json.Unmarshal(data, &rest); e != nil {
		return e
	}
	*w = rest.wireResponse
	w.Content = content
	return nil
}

// opensUnknown reports whether err, the error of decoding e, only says that the block a
// content_block_start opens, of a type this package does not model, holds a field of another
// shape than it reads (see decodeAnswer): the event is then kept, not malformed.
func (e *streamEvent) opensUnknown(err error) bool {
	var te *json.UnmarshalTypeError
	return errors.As(err, &te) && e.Type == "content_block_start" && e.ContentBlock != nil &&
		e.ContentBlock.Type != "" && !modeled(e.ContentBlock.Type) && strings.HasPrefix(te.Field, "content_block.")
}
