package openai_test

import (
	"context"
	"testing"

	"github.com/steadyllm/steady/internal/testkit/providertest"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
)

// Output items are read by their type: the types the wire reads are decoded whole (a shape
// that does not fit is a malformed answer), and an item of any other type keeps its type
// alone, whatever shape its fields have — also when they use the names of the known ones.
func TestResponses_OutputItemsAreReadByTheirType(t *testing.T) {
	const msg = `{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Hi."}]}`
	const reasoning = `{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Think."}],"encrypted_content":"enc"}`
	answer := func(items string) string {
		return `{"id":"resp_1","object":"response","status":"completed","model":"gpt-4o","output":[` + items + `],` +
			`"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}`
	}
	for _, tc := range []struct {
		name, items string
		malformed   bool
	}{
		{"known types", reasoning + "," + msg, false},
		{"another type, the known names in other shapes", `{"type":"web_search_call","id":7,"content":"x","summary":{"a":1},"arguments":[1]},` + reasoning + "," + msg, false},
		{"another type, the known names in their shapes", `{"type":"mcp_call","id":"mcp_1","name":"n","arguments":"{}","content":[{"type":"output_text","text":"not the answer"}]},` + reasoning + "," + msg, false},
		{"a message in another shape", `{"type":"message","content":"Hi."}`, true},
		{"a reasoning item in another shape", `{"type":"reasoning","id":"rs_1","summary":"Think."},` + msg, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := providertest.CannedServer(t, answer(tc.items), "")
			p, err := openai.New(openai.Config{API: openai.Responses, BaseURL: srv.URL + "/v1", APIKey: sentinel, Model: "gpt-4o", HTTPClient: srv.Client()})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := p.Chat(context.Background(), ask("Hi"))
			if tc.malformed {
				if e := asError(t, err); e.Kind != providers.KindUnavailable {
					t.Fatalf("%v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			th := resp.Message.Thinking
			if resp.Message.Content != "Hi." || len(th) != 1 || th[0].ID != "rs_1" || th[0].Text != "Think." || th[0].Encrypted != "enc" {
				t.Fatalf("%+v", resp.Message)
			}
		})
	}
}
