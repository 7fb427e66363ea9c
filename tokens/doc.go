// Package tokens counts the prompt tokens an OpenAI-family model bills for a request: the
// text through a real tokenizer's Encoding, and around it the chat format's own costs, which
// OpenAI documents in its cookbook and guides rather than in the API.
//
// The package carries no tokenizer. Encodings are registered (Register) by the packages that
// implement them; github.com/steadyllm/steady/tokens/tiktoken, a module of its own, registers
// OpenAI's o200k_base and cl100k_base when imported:
//
//	import _ "github.com/steadyllm/steady/tokens/tiktoken"
//
//	enc, ok := tokens.ForModel(req.Model) // o200k_base for gpt-4o
//	if ok {
//		n := tokens.CountChat(enc, req) // what usage.prompt_tokens will say
//	}
//
// # Which encoding
//
// EncodingForModel maps a model name to its encoding by prefix, after the table of OpenAI's
// tiktoken: o200k_base for gpt-4o, gpt-4.1, gpt-4.5, gpt-5, the o-series, chatgpt-4o and
// gpt-oss; cl100k_base for gpt-4, gpt-3.5-turbo and the embedding models; "" for every other
// model, Anthropic's included, whose tokenizers are not public. Dated snapshots, routers'
// "openai/…" names and fine-tunes' "ft:…" names follow their family; a deployment named
// otherwise needs its caller to say which encoding it uses.
//
// # What a prompt costs
//
// CountChat adds, to the tokens of each message's role and content, the constants OpenAI's
// cookbook "How to count tokens with tiktoken" publishes and checks against the API:
//
//	per message            3  (TokensPerMessage)       per name   its tokens + 1 (TokensPerName)
//	reply priming          3  (ReplyPriming)           per tool call  name + arguments + 3 (TokensPerToolCall)
//	tool definitions       per function 7 (gpt-4 generation: 10), "name:description";
//	                       3 for its properties, per property 3 and "name:type:description";
//	                       an enum -3, per item 3 and the item; 12 after the functions
//	images                 the "Images and vision" guide's per-model tiles or patches (ImageTokens)
//
// Where each comes from, and what was checked against it, is said on the constant or function.
//
// # Accuracy
//
// On text, the count is the tokenizer's: the tokens/tiktoken tests check CountChat against
// the library's own count of each prompt rendered in the chat format, exactly, on a corpus of
// 65 prompts (English prose; Go, Python, JavaScript, TypeScript, Rust, Java, C, SQL, shell,
// HTML and YAML; JSON; support chats; tool definitions and calls; German, French, Spanish,
// Greek, Russian, Arabic, Hindi, Japanese, Chinese and Korean text and emoji), and the
// library against counts OpenAI's Python tiktoken prints. Against the API itself, the only
// numbers available offline are those OpenAI's cookbook prints from live calls — its example
// conversation (124 tokens on gpt-4o and gpt-4o-mini, 129 on gpt-4 and gpt-3.5-turbo) and its
// weather tool (101 and 105) — and those recorded by hmarr/openai-chat-tokens for
// gpt-3.5-turbo: all are reproduced exactly, except function definitions with nested objects
// (6 tokens high on the one recorded) and a tool call with its result reported on OpenAI's
// forum (1 low). Not checked against the API: the rules on current models beyond gpt-4o (the
// cookbook stops there), tool calls and results in the tools API, the JSON schema of a
// structured output (SchemaTokens counts its text; OpenAI documents no rule), and image costs
// beyond the guide's examples. The Responses API is counted by the chat rule.
//
// Counting allocates nothing beyond the encoding's own for text; it is done only when a
// caller asks, so a program that never counts pays nothing but the registration.
package tokens
