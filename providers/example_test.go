package providers_test

import (
	"fmt"

	"github.com/steadyllm/steady/providers"
)

// A long conversation whose answer came with a compaction item can be sent on without what the
// item stands for; the request is then pinned to the provider that made the item.
func ExamplePruneCompacted() {
	conversation := []providers.Message{
		{Role: providers.RoleSystem, Content: "Be brief."},
		{Role: providers.RoleUser, Content: "…a long first question…"},
		{Role: providers.RoleAssistant, Content: "…a long answer…",
			Compaction: &providers.Compaction{ID: "cmp_1", Encrypted: "opaque", Origin: "3f9c"}},
		{Role: providers.RoleUser, Content: "And then?"},
	}
	req := &providers.ChatRequest{Messages: providers.PruneCompacted(conversation)}
	for _, m := range req.Messages {
		fmt.Println(m.Role, m.Content)
	}
	pin, _ := req.Pin()
	fmt.Println("pinned to", pin.Origin, "by", pin.What)
	// Output:
	// system Be brief.
	// assistant …a long answer…
	// user And then?
	// pinned to 3f9c by the compaction item cmp_1 of a pruned conversation
}
