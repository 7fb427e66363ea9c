package tiktoken_test

import (
	"strconv"
	"testing"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/tokens"
	"github.com/tiktoken-go/tokenizer/codec"
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

// codecEncoding is o200k_base straight from the library, without the cache the package
// registers it behind.
type codecEncoding struct{ c *codec.Codec }

func (e codecEncoding) Name() string { return e.c.GetName() }
func (e codecEncoding) Count(s string) int {
	n, _ := e.c.Count(s)
	return n
}

// BenchmarkCached counts a long system prompt (../testdata/system-prompt.txt, 886 o200k_base
// tokens) with o200k_base uncached, through tokens.Cached when the prompt is in the cache
// (hit), and when it never is (miss: prompts that differ in their first bytes take turns in
// a one-entry cache), and reports the time and allocations per 1,000 tokens.
func BenchmarkCached(b *testing.B) {
	systemPrompt := readSystemPrompt(b)
	raw := codecEncoding{codec.NewO200kBase()}
	const variants = 16
	prompts := make([]string, variants)
	for i := range prompts {
		prompts[i] = strconv.Itoa(i) + systemPrompt
	}
	per := float64(raw.Count(systemPrompt)) / 1000
	hit := tokens.Cached(raw, 16)
	hit.Count(prompts[0])
	for _, bc := range []struct {
		name string
		enc  tokens.Encoding
		step int // how far to move through prompts each count
	}{
		{"uncached", raw, 0},
		{"hit", hit, 0},
		{"miss", tokens.Cached(raw, 1), 1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				bc.enc.Count(prompts[i*bc.step%variants])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/per, "ns/1000tok")
			allocs := testing.AllocsPerRun(20, func() {
				for i := 0; i < variants; i++ {
					bc.enc.Count(prompts[i*bc.step%variants])
				}
			})
			b.ReportMetric(allocs/variants/per, "allocs/1000tok")
		})
	}
}
