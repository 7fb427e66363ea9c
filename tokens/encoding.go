package tokens

import (
	"strings"
	"sync"
	"sync/atomic"
)

// Encoding counts the tokens of a text in one tokenizer's vocabulary (o200k_base,
// cl100k_base…). Implementations are safe for concurrent use, never retain the text, and
// count it as ordinary text: a special-token marker such as "<|endoftext|>" inside it
// counts as the characters it is made of, as the APIs count user text. Count of "" is 0.
type Encoding interface {
	// Name is the encoding's name, the key Register files it under ("o200k_base").
	Name() string
	// Count returns the number of tokens text encodes to.
	Count(text string) int
}

// The encodings EncodingForModel names.
const (
	O200kBase  = "o200k_base"
	Cl100kBase = "cl100k_base"
)

// registry holds the registered encodings: a map replaced whole on each Register, so that
// Lookup, on every counted call, reads it without a lock.
var registry struct {
	mu sync.Mutex // serialises Register
	m  atomic.Pointer[map[string]Encoding]
}

// Register makes enc available to Lookup under enc.Name(). A later registration under the
// same name replaces the earlier one, so a program can put its own implementation (or a
// wrapper) in place of a package's. It is meant for init functions — importing
// github.com/steadyllm/steady/tokens/tiktoken registers o200k_base and cl100k_base — and is
// safe for concurrent use. It panics if enc is nil or its name is empty: both are
// programming errors that would otherwise surface as silently missing counts.
func Register(enc Encoding) {
	if enc == nil {
		panic("tokens: Register of a nil Encoding")
	}
	name := enc.Name()
	if name == "" {
		panic("tokens: Register of an Encoding with an empty name")
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	next := map[string]Encoding{name: enc}
	if cur := registry.m.Load(); cur != nil {
		for k, v := range *cur {
			if k != name {
				next[k] = v
			}
		}
	}
	registry.m.Store(&next)
}

// Lookup returns the encoding registered under name, and false when none is (nothing
// imported the package that registers it, or name is ""). It takes no lock and allocates
// nothing.
func Lookup(name string) (Encoding, bool) {
	m := registry.m.Load()
	if m == nil || name == "" {
		return nil, false
	}
	enc, ok := (*m)[name]
	return enc, ok
}

// ForModel returns the registered encoding of model (EncodingForModel), and false when the
// model's encoding is unknown or not registered.
func ForModel(model string) (Encoding, bool) {
	return Lookup(EncodingForModel(model))
}

// family is one row of the model table: a model-name prefix and its encoding. The prefix
// matches a whole name part: what follows it is the end of the name or a separator ('-',
// ':', '@', '_'), or, when versions is set, a '.' too ("gpt-5" matches "gpt-5.1" but "gpt-4"
// does not match a future "gpt-4.2" whose encoding nobody has announced).
type family struct {
	prefix   string
	encoding string
	versions bool
}

// models is the model table, most specific prefix first. Source: the model→encoding table of
// OpenAI's tiktoken (tiktoken/model.py, MODEL_PREFIX_TO_ENCODING and MODEL_TO_ENCODING), which
// gives o200k_base to gpt-4o, gpt-4.1, gpt-4.5, gpt-5, the o1/o3/o4 series and chatgpt-4o, and
// cl100k_base to gpt-4, gpt-3.5-turbo (Azure spells it gpt-35-turbo), text-embedding-3-*,
// text-embedding-ada-002, davinci-002 and babbage-002. tiktoken names gpt-oss's encoding
// o200k_harmony: o200k_base's vocabulary and split pattern plus the harmony format's special
// tokens, so ordinary text counts the same in both and the table says o200k_base.
var models = []family{
	{"gpt-4o", O200kBase, false},
	{"gpt-4.1", O200kBase, false},
	{"gpt-4.5", O200kBase, false},
	{"gpt-5", O200kBase, true},
	{"chatgpt-4o", O200kBase, false},
	{"gpt-oss", O200kBase, false},
	{"o1", O200kBase, false},
	{"o3", O200kBase, false},
	{"o4", O200kBase, false},
	{"gpt-4", Cl100kBase, false},
	{"gpt-3.5", Cl100kBase, false},
	{"gpt-35", Cl100kBase, false},
	{"text-embedding-3", Cl100kBase, false},
	{"text-embedding-ada-002", Cl100kBase, false},
	{"davinci-002", Cl100kBase, false},
	{"babbage-002", Cl100kBase, false},
}

// EncodingForModel names the encoding of an OpenAI model, O200kBase or Cl100kBase, or "" for a
// model it does not know (claude-…, gemini-…, llama-…, an Azure deployment's own name): a
// caller that knows better overrides it per deployment.
//
// The name is matched by prefix, case-insensitively, on whole name parts, so dated snapshots
// and variants follow their family: "gpt-4o-2024-08-06" and "gpt-4o-mini" are o200k_base,
// "gpt-4-turbo" and "gpt-4-0613" cl100k_base. Before matching, a router's provider prefix is
// dropped (everything up to the last '/': "openai/gpt-4o", "azure/gpt-4.1-mini") and so is a
// fine-tune's "ft:" ("ft:gpt-4o-mini-2024-07-18:org::id" is gpt-4o-mini's).
//
//	o200k_base   gpt-4o*, gpt-4.1*, gpt-4.5*, gpt-5* (gpt-5.1…), o1*, o3*, o4*, chatgpt-4o*, gpt-oss*
//	cl100k_base  gpt-4 and gpt-4-* (not 4o, 4.1, 4.5), gpt-3.5*, gpt-35* (Azure), text-embedding-3-*,
//	             text-embedding-ada-002, davinci-002, babbage-002
//
// It allocates nothing.
func EncodingForModel(model string) string {
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		model = model[i+1:]
	}
	if len(model) >= 3 && strings.EqualFold(model[:3], "ft:") {
		model = model[3:]
	}
	for _, f := range models {
		if matchFamily(model, f) {
			return f.encoding
		}
	}
	return ""
}

// matchFamily reports whether model starts with f.prefix (in any case) followed by the end of
// the name or a separator.
func matchFamily(model string, f family) bool {
	if len(model) < len(f.prefix) || !strings.EqualFold(model[:len(f.prefix)], f.prefix) {
		return false
	}
	if len(model) == len(f.prefix) {
		return true
	}
	switch model[len(f.prefix)] {
	case '-', ':', '@', '_':
		return true
	case '.':
		return f.versions
	}
	return false
}
