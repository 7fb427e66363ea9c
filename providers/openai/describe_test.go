package openai_test

import (
	"testing"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
)

func TestDescribe_NamesTheGenAISystemOfEachKind(t *testing.T) {
	for _, tc := range []struct {
		kind   openai.Dialect
		system string
	}{
		{openai.OpenAI, providers.SystemOpenAI},
		{openai.Azure, providers.SystemAzureOpenAI},
		{openai.Compatible, providers.SystemOpenAI}, // the conventions name the protocol's system
	} {
		p, err := openai.New(openai.Config{Dialect: tc.kind, BaseURL: "https://llm.example.com", APIKey: "sk-test", Model: "m-1"})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := p.Describe(), (providers.Description{System: tc.system, DefaultModel: "m-1",
			Capabilities: providers.AllCapabilities &^ providers.CapStoredResponses}); got != want {
			t.Errorf("%s: %+v, want %+v", tc.kind, got, want)
		}
	}
}

// The old spelling of the compatible dialect still names it, and needs no key.
func TestFormerDialectSpellings(t *testing.T) {
	for _, cfg := range []openai.Config{
		{Dialect: "compatible", BaseURL: "http://127.0.0.1:1/v1"},
		{Dialect: openai.Compatible, BaseURL: "http://127.0.0.1:1/v1"},
	} {
		p, err := openai.New(cfg)
		if err != nil {
			t.Fatalf("%+v: %v", cfg, err)
		}
		if p.Name() != string(openai.Compatible) {
			t.Errorf("%+v: name %q, want %q", cfg, p.Name(), openai.Compatible)
		}
	}
}

// VendorHost is OpenAI's own service only: not a proxy, a compatible server or Azure.
func TestDescribe_VendorHostIsOpenAIsOwn(t *testing.T) {
	for _, tc := range []struct {
		dialect openai.Dialect
		base    string
		vendor  bool
	}{
		{openai.OpenAI, "", true},
		{openai.OpenAI, "https://API.openai.com/v1/", true},
		{openai.OpenAI, "https://proxy.example.com/v1", false},
		{openai.Compatible, "https://api.openai.com/v1", false},
		{openai.Azure, "https://res.openai.azure.com", false},
	} {
		p, err := openai.New(openai.Config{Dialect: tc.dialect, BaseURL: tc.base, APIKey: "sk-test"})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Describe().VendorHost; got != tc.vendor {
			t.Errorf("%s at %q: VendorHost %v, want %v", tc.dialect, tc.base, got, tc.vendor)
		}
	}
}
