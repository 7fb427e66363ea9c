package tokens

import "github.com/steadyllm/steady/providers"

// The chat format's fixed costs, from OpenAI's cookbook "How to count tokens with tiktoken"
// (examples/How_to_count_tokens_with_tiktoken.ipynb, num_tokens_from_messages): every message
// is wrapped in three tokens (start, the separator after its role, end), a message's name
// costs its own tokens plus one, and every reply is primed with three more. The cookbook
// checks them against the API's prompt_tokens for gpt-3.5-turbo, gpt-4, gpt-4o and
// gpt-4o-mini (129, 129, 124 and 124 on its example conversation); TestCookbook_* here check
// the same numbers. gpt-3.5-turbo-0301 used four and minus one; it is retired and not modelled.
const (
	TokensPerMessage = 3
	TokensPerName    = 1
	ReplyPriming     = 3
)

// TokensPerToolCall is what one tool call in an assistant message costs beyond its name and
// arguments. OpenAI documents no rule for it; hmarr/openai-chat-tokens (MIT), whose test
// cases were checked against the API's prompt_tokens for gpt-3.5-turbo, found a legacy
// function_call to cost its name, its arguments and three tokens, and the same is assumed
// for each entry of tool_calls. A tool result (RoleTool) is an ordinary message: its
// tool_call_id is assumed not to be shown to the model.
const TokensPerToolCall = 3

// CountChat returns the prompt tokens OpenAI's chat completions API bills for req
// (usage.prompt_tokens), counted with enc, the encoding of req.Model's family: the
// per-message wrapper (TokensPerMessage) and each message's role and content, its text and
// image parts (ImageTokens), the tool calls of assistant messages (TokensPerToolCall), tool
// results, the tool definitions (ToolTokens), the schema of a structured output
// (SchemaTokens) and the reply priming (ReplyPriming). The model-dependent parts — image
// costs, and the tool constants of the gpt-4 and gpt-3.5 generation — follow req.Model;
// CountChatAs names the model when req.Model does not (an Azure deployment's own name).
//
// What it cannot see is not counted: the items of a stored conversation (req.Previous,
// req.Conversation), reasoning items and compaction summaries sent back to the provider
// that wrote them (Message.Thinking, Message.Compaction), Anthropic's ProviderBlocks (never
// sent to OpenAI), and tool_choice. The Responses API takes the same request and is counted
// by the same rule: OpenAI publishes no different one for its input items.
//
// A nil enc or req counts 0. It allocates nothing itself for text-only requests (the
// encoding may); tool definitions and structured-output schemas are parsed, which does.
func CountChat(enc Encoding, req *providers.ChatRequest) int {
	if req == nil {
		return 0
	}
	return CountChatAs(enc, req.Model, req)
}

// CountChatAs is CountChat with model, instead of req.Model, choosing the model-dependent
// rules (image costs, tool constants): for a deployment whose name is not its model's.
func CountChatAs(enc Encoding, model string, req *providers.ChatRequest) int {
	if enc == nil || req == nil {
		return 0
	}
	n := ReplyPriming
	for i := range req.Messages {
		n += countMessage(enc, model, &req.Messages[i], "")
	}
	n += ToolTokens(enc, model, req.Tools)
	if req.Schema != nil {
		n += SchemaTokens(enc, req.Schema)
	}
	return n
}

// countMessage counts one message of the chat format, with name (the chat completions API's
// optional participant name; providers.Message carries none, so CountChat passes "").
func countMessage(enc Encoding, model string, m *providers.Message, name string) int {
	n := TokensPerMessage + enc.Count(string(m.Role)) + enc.Count(m.Content)
	if name != "" {
		n += enc.Count(name) + TokensPerName
	}
	for i := range m.Parts {
		p := &m.Parts[i]
		if p.Image != nil {
			n += ImageTokens(model, p.Image)
			continue
		}
		n += enc.Count(p.Text)
	}
	for i := range m.ToolCalls {
		tc := &m.ToolCalls[i]
		n += TokensPerToolCall + enc.Count(tc.Name) + enc.Count(tc.Arguments)
	}
	return n
}

// CountEmbedding returns the tokens OpenAI's embeddings API bills for inputs: the sum of each
// input's tokens. Embedding inputs are not wrapped in a chat template, so nothing is added
// per input. A nil enc counts 0.
func CountEmbedding(enc Encoding, inputs []string) int {
	if enc == nil {
		return 0
	}
	n := 0
	for _, in := range inputs {
		n += enc.Count(in)
	}
	return n
}
