package mocks

import (
	"errors"
	"strings"
	"unicode"
)

// A prefill: a request whose last message is the assistant's beginning of the answer, which
// the model continues. The Messages API continues any final assistant message (unless the
// model rejects prefills: WithRejectPrefill); the Chat Completions side continues one only when
// the request says so, as the OpenAI-compatible servers that take a prefill do — "prefix": true
// on the message (DeepSeek, Mistral) or "continue_final_message": true (vLLM) — and answers any
// other final assistant message as a finished turn, as OpenAI does.

// anthropicPrefill reads the final assistant message m of a Messages request, with thinking
// on or not, as a prefill, refusing what the API refuses: text ending in whitespace, and a
// prefill with extended thinking.
func (c *call) anthropicPrefill(m message, thinking bool) error {
	text := contentText(m.Content)
	switch {
	case strings.TrimRightFunc(text, unicode.IsSpace) != text:
		return invalidParam("messages", "messages: final assistant content cannot end with trailing whitespace")
	case thinking:
		return invalidParam("messages", "messages: a final assistant message (prefill) cannot be used with extended thinking")
	}
	c.prefill = text
	return nil
}

// openAIPrefill reads the last of msgs as a prefill when the request marks it so: its "prefix"
// or the body's continue_final_message (which vLLM refuses with add_generation_prompt true,
// its default).
func (c *call) openAIPrefill(msgs []message, continueFinal bool, addGenerationPrompt *bool) error {
	if len(msgs) == 0 {
		return nil
	}
	last := msgs[len(msgs)-1]
	if !continueFinal && !last.Prefix {
		return nil
	}
	if continueFinal && (addGenerationPrompt == nil || *addGenerationPrompt) {
		return errors.New("continue_final_message and add_generation_prompt cannot both be true")
	}
	if last.Role != "assistant" {
		return invalidParam("messages", "the final message must be the assistant's to continue it")
	}
	c.prefill = contentText(last.Content)
	return nil
}

// continued is the answer text of a call that continues a prefill: what follows the prefill
// in text when text begins with it, else text itself (the model writes on from there) — never
// the prefill again.
func (c *call) continued(text string) string {
	if c.prefill == "" {
		return text
	}
	if rest, ok := strings.CutPrefix(text, c.prefill); ok {
		return rest
	}
	return text
}
