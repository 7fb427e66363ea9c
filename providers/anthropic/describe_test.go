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
		Capabilities: providers.AllCapabilities &^ providers.CapEmbeddings &^ providers.CapStoredResponses, // no embeddings API, nothing stored
		VendorHost:   true}                                                                                 // the default base URL: Anthropic's own
	if got := p.Describe(); got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
	for base, vendor := range map[string]bool{"https://api.anthropic.com/v1": true, "http://127.0.0.1:8080": false,
		"https://gateway.example.com/anthropic": false} {
		p, err := anthropic.New(anthropic.Config{APIKey: "sk-ant-test", BaseURL: base})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Describe().VendorHost; got != vendor {
			t.Errorf("BaseURL %s: VendorHost %v, want %v", base, got, vendor)
		}
	}
}
