package mocks_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/steadyllm/steady/mocks"
)

// jsonBody is w's request for a whole (non-streaming) answer.
func (w wire) jsonBody() string { return strings.Replace(w.body, `"stream":true`, `"stream":false`, 1) }

func TestRefusal_WholeAnswerInJSON(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Refusal("I can't help with that.").WithRefusalCategory("cyber").Times(2)))
	w := wires()
	res, b := mustDo(t, s, http.MethodPost, w[0].path, w[0].header, w[0].jsonBody())
	v := decode(t, b)
	msg := path(v, "choices", 0, "message")
	if res.StatusCode != 200 || path(msg, "refusal") != "I can't help with that." || path(msg, "content") != nil ||
		path(v, "choices", 0, "finish_reason") != "stop" {
		t.Errorf("openai: %d %s", res.StatusCode, b)
	}
	res, b = mustDo(t, s, http.MethodPost, w[1].path, w[1].header, w[1].jsonBody())
	v = decode(t, b)
	want := map[string]any{"type": "refusal", "category": "cyber", "explanation": "I can't help with that."}
	if content, _ := path(v, "content").([]any); res.StatusCode != 200 || path(v, "stop_reason") != "refusal" ||
		len(content) != 0 || !reflect.DeepEqual(path(v, "stop_details"), want) {
		t.Errorf("anthropic: %d %s", res.StatusCode, b)
	}
}

func TestRefuseAfter_PartOfTheAnswerThenTheRefusalInJSON(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.RefuseAfter(2, "No.").Times(2)))
	w := wires()
	_, b := mustDo(t, s, http.MethodPost, w[0].path, w[0].header, w[0].jsonBody())
	msg := path(decode(t, b), "choices", 0, "message")
	if path(msg, "content") != "one two" || path(msg, "refusal") != "No." {
		t.Errorf("openai: %s", b)
	}
	_, b = mustDo(t, s, http.MethodPost, w[1].path, w[1].header, w[1].jsonBody())
	v := decode(t, b)
	if path(v, "content", 0, "text") != "one two" || path(v, "stop_reason") != "refusal" ||
		path(v, "stop_details", "category") != nil || path(v, "stop_details", "explanation") != "No." {
		t.Errorf("anthropic: %s", b)
	}
}

func TestRefuseAfter_MidStreamInBothWireFormats(t *testing.T) {
	for _, w := range wires() {
		t.Run(w.name, func(t *testing.T) {
			s := newServer(t, mocks.WithScript(mocks.RefuseAfter(2, "I must stop here.").WithRefusalCategory("bio")))
			got, evs, err := readStream(t, s, w, w.body)
			if err != nil || got.text != "one two" || !got.terminal {
				t.Fatalf("%+v, err %v", got, err)
			}
			if w.anthropic() {
				// message_delta carries stop_reason and stop_details, then message_stop.
				want := map[string]any{"type": "refusal", "category": "bio", "explanation": "I must stop here."}
				if got.finish != "refusal" || !reflect.DeepEqual(got.details, want) || evs[len(evs)-1].name != "message_stop" {
					t.Errorf("%+v", got)
				}
				return
			}
			wantFinish := "stop"
			if w.responses() {
				wantFinish = "completed" // a refusal part, in a completed response
			}
			if got.refusal != "I must stop here." || got.finish != wantFinish {
				t.Errorf("%+v", got)
			}
		})
	}
}

func TestContentFilter_StopsTheAnswerMidStream(t *testing.T) {
	for _, w := range wires() {
		t.Run(w.name, func(t *testing.T) {
			s := newServer(t, mocks.WithScript(mocks.ContentFiltered(3)))
			got, _, err := readStream(t, s, w, w.body)
			want := "content_filter"
			if w.anthropic() {
				want = "refusal" // Anthropic's nearest reason
			}
			if err != nil || got.text != "one two three" || got.finish != want || !got.terminal || got.refusal != "" {
				t.Errorf("%+v, err %v", got, err)
			}
		})
	}
}

func TestContentFilter_InJSONKeepsThePartSentBefore(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.ContentFiltered(1)))
	w := wires()[0]
	_, b := mustDo(t, s, http.MethodPost, w.path, w.header, w.jsonBody())
	v := decode(t, b)
	if path(v, "choices", 0, "message", "content") != "one" || path(v, "choices", 0, "finish_reason") != "content_filter" {
		t.Errorf("%s", b)
	}
}

func TestRefusal_ReplacesAToolCall(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Step{ToolCall: &mocks.ToolCall{Name: "f"}, Refuse: "No tools for you."}))
	w := wires()[0]
	_, b := mustDo(t, s, http.MethodPost, w.path, w.header, w.jsonBody())
	msg := path(decode(t, b), "choices", 0, "message")
	if path(msg, "tool_calls") != nil || path(msg, "refusal") != "No tools for you." {
		t.Errorf("%s", b)
	}
}
