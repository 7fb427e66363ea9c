package wire

import (
	"errors"
	"strings"
	"testing"

	"github.com/steadyllm/steady/providers"
)

func TestClassify_BothAnthropicContextPhrasingsAreContextTooLong(t *testing.T) {
	for _, msg := range []string{
		"prompt is too long: 210000 tokens > 200000 maximum",
		"input length and `max_tokens` exceed context limit: 187254 + 20000 > 200000, decrease input length or `max_tokens` and try again",
	} {
		if got := Classify(400, "invalid_request_error", "", msg); got != providers.KindContextTooLong {
			t.Errorf("Classify(%q) = %s", msg, got)
		}
	}
}

func TestOverflow_ReadsTheSizesEachWireStates(t *testing.T) {
	type o = providers.ContextOverflow
	cases := []struct {
		msg  string
		want *o
	}{
		{"prompt is too long: 210000 tokens > 200000 maximum", &o{Window: 200000, Requested: 210000, Input: 210000}},
		{"input length and `max_tokens` exceed context limit: 187254 + 20000 > 200000, decrease input length or `max_tokens` and try again",
			&o{Window: 200000, Requested: 207254, Input: 187254, Output: 20000}},
		{"This model's maximum context length is 128000 tokens. However, you requested 130000 tokens (120000 in the messages, 10000 in the completion). Please reduce the length of the messages or completion.",
			&o{Window: 128000, Requested: 130000, Input: 120000, Output: 10000}},
		{"This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (7000 in the messages, 1000 in the functions, 1000 in the completion).",
			&o{Window: 8192, Requested: 9000, Input: 8000, Output: 1000}},
		{"This model's maximum context length is 4096 tokens. However, your messages resulted in 5000 tokens. Please reduce the length of the messages.",
			&o{Window: 4096, Requested: 5000, Input: 5000}},
		{"This model's maximum context length is 200,000 tokens. However, you requested 210,000 tokens.", &o{Window: 200000, Requested: 210000}},
		// Nothing to read, or numbers that contradict the error: no sizes.
		{"context_length_exceeded", nil},
		{"prompt is too long", nil},
		{"prompt is too long: 100 tokens > 200 maximum", nil},
		{"This model's maximum context length is 99999999999999999999 tokens. However, you requested 5 tokens.", nil},
		{"input length and `max_tokens` exceed context limit: 1 + 2", nil},
	}
	for _, c := range cases {
		got := Overflow(c.msg)
		if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
			t.Errorf("Overflow(%q) = %+v, want %+v", c.msg, got, c.want)
		}
	}
}

func TestFinish_MarksDetailsOnlyOnTheirKinds(t *testing.T) {
	x := NewErrors("p", "sk-secret-key-0123456789")
	const prefill = "This model does not support assistant message prefill. The conversation must end with a user message."
	e := x.Finish(&providers.Error{Kind: providers.KindBadRequest, Code: "invalid_request_body", Message: prefill})
	if e.Code != providers.CodePrefillUnsupported || !errors.Is(e, providers.ErrPrefillUnsupported) {
		t.Errorf("prefill: %#v", e)
	}
	// The same words under another kind (a 500 quoting them, say) mark nothing.
	e = x.Finish(&providers.Error{Kind: providers.KindUnavailable, Message: prefill})
	if e.Code != "" || errors.Is(e, providers.ErrPrefillUnsupported) {
		t.Errorf("unavailable: %#v", e)
	}
	e = x.Finish(&providers.Error{Kind: providers.KindContextTooLong, Message: "prompt is too long: 3 tokens > 2 maximum"})
	if e.Overflow == nil || e.Overflow.Window != 2 {
		t.Errorf("context: %#v", e)
	}
	e = x.Finish(&providers.Error{Kind: providers.KindBadRequest, Message: "prompt is too long: 3 tokens > 2 maximum"})
	if e.Overflow != nil {
		t.Errorf("bad request: %#v", e)
	}
}

func TestRefused_ScrubsAndBoundsTheServersText(t *testing.T) {
	const key = "sk-secret-key-0123456789"
	x := NewErrors("p", key)
	e := x.Refused("no, and here is your key "+key+strings.Repeat(" no", 1000), "cyber")
	if e.Kind != providers.KindRefused || e.Code != "cyber" || strings.Contains(e.Message, key) || len(e.Message) > maxMessage+8 {
		t.Errorf("%#v", e)
	}
	if e := x.Refused("", "bio"); !strings.Contains(e.Message, "bio") || e.Code != "bio" {
		t.Errorf("%#v", e)
	}
	if e := x.Filtered(""); e.Kind != providers.KindContentFiltered || e.Message == "" {
		t.Errorf("%#v", e)
	}
	cause := errors.New("unexpected end of JSON input")
	if e := x.Malformed(4, cause); e.Kind != providers.KindUnavailable || !strings.Contains(e.Message, "event 4") || !errors.Is(e, cause) {
		t.Errorf("%#v", e)
	}
}
