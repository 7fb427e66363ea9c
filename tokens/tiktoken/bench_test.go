package tiktoken_test

import (
	"testing"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/tokens"
)

// BenchmarkCountChat counts the corpus's prompts of each category with each encoding and
// reports the time and allocations per 1,000 prompt tokens (the vocabularies are built
// before the timer starts).
func BenchmarkCountChat(b *testing.B) {
	byCat := map[string][]*providers.ChatRequest{}
	for _, c := range readCorpus(b, corpusPath) {
		byCat[c.category] = append(byCat[c.category], &c.req)
		byCat["all"] = append(byCat["all"], &c.req)
	}
	for _, encName := range []string{tokens.O200kBase, tokens.Cl100kBase} {
		enc := lookup(b, encName)
		model := models[encName]
		for _, cat := range []string{"all", "prose", "code", "json", "chat", "tools", "multi"} {
			reqs := byCat[cat]
			total := 0
			for _, r := range reqs {
				total += tokens.CountChatAs(enc, model, r)
			}
			b.Run(encName+"/"+cat, func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					for _, r := range reqs {
						tokens.CountChatAs(enc, model, r)
					}
				}
				thousands := float64(b.N) * float64(total) / 1000
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/thousands, "ns/1000tok")
				allocs := testing.AllocsPerRun(2, func() {
					for _, r := range reqs {
						tokens.CountChatAs(enc, model, r)
					}
				})
				b.ReportMetric(allocs*1000/float64(total), "allocs/1000tok")
			})
		}
	}
}
