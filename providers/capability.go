package providers

import (
	"fmt"
	"strings"
)

// Capabilities is the set of things a provider can do. A fallback chain skips a provider that
// lacks what a call needs, instead of calling it and failing. A provider declares its
// capabilities in Description.Capabilities; a provider that declares none (zero, or no
// Describer) is taken to be capable of everything, and fails by itself where it is not.
type Capabilities uint32

// The capabilities.
const (
	CapChat       Capabilities = 1 << iota // Chat
	CapStreaming                           // ChatStream
	CapEmbeddings                          // Embed
	CapTools                               // ChatRequest.Tools, tool calls and tool results
	CapJSONOutput                          // ChatRequest.Format = FormatJSON
	CapImages                              // image parts in messages
	CapJSONSchema                          // ChatRequest.Schema: structured output
	CapReasoning                           // ChatRequest.Reasoning
	// CapStoredResponses is continuing from an answer the provider stored
	// (ChatRequest.Previous: OpenAI Responses' previous_response_id) or from a conversation it
	// keeps (ChatRequest.Conversation), and answering in background mode
	// (ChatRequest.Background), which stores the answer.
	CapStoredResponses
)

// AllCapabilities is every capability this version knows.
const AllCapabilities = CapChat | CapStreaming | CapEmbeddings | CapTools | CapJSONOutput | CapImages |
	CapJSONSchema | CapReasoning | CapStoredResponses

var capNames = []struct {
	c    Capabilities
	name string
}{
	{CapChat, "chat"}, {CapStreaming, "streaming"}, {CapEmbeddings, "embeddings"},
	{CapTools, "tools"}, {CapJSONOutput, "JSON output"}, {CapImages, "images"},
	{CapJSONSchema, "structured output"}, {CapReasoning, "reasoning"},
	{CapStoredResponses, "stored responses"},
}

// CapabilityNames are the names ParseCapabilities accepts, as String writes them.
func CapabilityNames() []string {
	names := make([]string, len(capNames))
	for i, n := range capNames {
		names[i] = n.name
	}
	return names
}

// ParseCapabilities reads capability names ("chat", "streaming", "tools", "JSON output",
// "images", "structured output"…; case, '_' and '-' do not matter). An unknown name is an
// error that names it and lists the known ones.
func ParseCapabilities(names []string) (Capabilities, error) {
	var c Capabilities
	for _, name := range names {
		key := strings.ToLower(strings.NewReplacer("_", " ", "-", " ").Replace(strings.TrimSpace(name)))
		found := false
		for _, n := range capNames {
			if strings.ToLower(n.name) == key {
				c |= n.c
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("unknown capability %q: known are %s", name, strings.Join(CapabilityNames(), ", "))
		}
	}
	return c, nil
}

// Has reports whether c holds every capability of need.
func (c Capabilities) Has(need Capabilities) bool { return c&need == need }

// Missing returns the capabilities of need that c lacks.
func (c Capabilities) Missing(need Capabilities) Capabilities { return need &^ c }

// String lists the capabilities, as "chat, streaming", or "none".
func (c Capabilities) String() string {
	var names []string
	for _, n := range capNames {
		if c&n.c != 0 {
			names = append(names, n.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Needs returns the capabilities that serving req needs: CapChat, or CapStreaming for a
// stream, plus CapTools, CapJSONOutput, CapImages, CapJSONSchema, CapReasoning and
// CapStoredResponses when the request uses them.
func (r *ChatRequest) Needs(stream bool) Capabilities {
	need := CapChat
	if stream {
		need = CapStreaming
	}
	if r == nil {
		return need
	}
	if len(r.Tools) > 0 {
		need |= CapTools
	}
	for _, m := range r.Messages {
		if len(m.ToolCalls) > 0 || m.Role == RoleTool {
			need |= CapTools
		}
		for _, p := range m.Parts {
			if p.Image != nil {
				need |= CapImages
			}
		}
	}
	if r.Format == FormatJSON {
		need |= CapJSONOutput
	}
	if r.Schema != nil {
		need |= CapJSONSchema
	}
	if r.Reasoning != nil {
		need |= CapReasoning
	}
	if r.Previous != nil || r.Background || r.Conversation != nil {
		need |= CapStoredResponses
	}
	return need
}

// CapabilitiesOf returns what p declares it can do or, when it declares nothing, every
// capability but CapStoredResponses: a provider that does not know of stored answers would
// ignore ChatRequest.Previous and answer without the conversation it names.
func CapabilitiesOf(p Provider) Capabilities {
	if d, ok := p.(Describer); ok {
		if c := d.Describe().Capabilities; c != 0 {
			return c
		}
	}
	return AllCapabilities &^ CapStoredResponses
}
