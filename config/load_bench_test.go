package config

import (
	"fmt"
	"strings"
	"testing"
)

// namesDoc is a configuration of n policies and n providers, each provider on its own
// policy, all in the fallback chain.
func namesDoc(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"LLM":{"Policies":{`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"pol%d":{"RetryCount":2}`, i)
	}
	b.WriteString(`},"Providers":{`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"prov%d":{"Type":"openai","APIKeyEnv":"K","Policy":"pol%d"}`, i, i)
	}
	b.WriteString(`},"Fallback":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"prov%d"`, i)
	}
	b.WriteString(`]}}`)
	return []byte(b.String())
}

// BenchmarkLoad_Names shows that loading is linear in the number of names: eight times the
// names, about eight times the time (it was quadratic: ×8 names cost ×22–55 time).
func BenchmarkLoad_Names(b *testing.B) {
	for _, n := range []int{100, 800} {
		d := namesDoc(n)
		env := []string{}
		for i := 0; i < n; i++ {
			env = append(env, fmt.Sprintf("LLM__Providers__prov%d__Model=m%d", i, i))
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := ParseWithEnv(d, env); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
