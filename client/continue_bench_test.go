package client_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// BenchmarkChatStream_ContinuableChain measures a stream that is not rescued on a chain whose
// second route could continue it (an OpenAI-compatible server with a prefill), over the
// in-memory transport, with rescue off and with "continue": the rescue a stream keeps ready
// must cost it no allocation.
func BenchmarkChatStream_ContinuableChain(b *testing.B) {
	for _, mode := range []string{resilience.RescueOff, resilience.RescueContinue} {
		b.Run(mode, func(b *testing.B) {
			o := benchPolicy()
			o.StreamRescue = mode
			route := func(name string, f openai.PrefillFlavor) client.Option {
				return client.WithProvider(name, o, func(hc *http.Client) (providers.Provider, error) {
					return openai.New(openai.Config{Name: name, Dialect: openai.Compatible, BaseURL: "http://127.0.0.1:1/v1",
						APIKey: "sk-bench", HTTPClient: hc, Model: "gpt-4o-mini", Prefill: f})
				})
			}
			c, err := client.New(route("llm", ""), route("cont", openai.PrefillPrefix), client.WithFallback("llm", "cont"),
				client.WithBaseTransport(pathTransport{}))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				st, err := c.ChatStream(context.Background(), benchHello())
				if err != nil {
					b.Fatal(err)
				}
				for _, err := range st.Deltas() {
					if err != nil {
						b.Fatal(err)
					}
				}
				_ = st.Close()
			}
		})
	}
}
