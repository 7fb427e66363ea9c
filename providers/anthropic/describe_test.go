package anthropic_test

import (
	"testing"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
)

func TestDescribe_NamesAnthropic(t *testing.T) {
	p, err := anthropic.New(anthropic.Config{APIKey: "sk-ant-test", Model: "claude-haiku-4-5"})
	if err != nil {
		t.Fatal(err)
	}
	want := providers.Description{System: providers.SystemAnthropic, DefaultModel: "claude-haiku-4-5",
		Capabilities: providers.AllCapabilities &^ providers.CapEmbeddings &^ providers.CapStoredResponses} // no embeddings API, nothing stored
	if got := p.Describe(); got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
}
