// Package tiktoken registers OpenAI's o200k_base and cl100k_base encodings with package tokens:
// a program imports it for its side effect,
//
//	import _ "github.com/steadyllm/steady/tokens/tiktoken"
//
// and tokens.Lookup("o200k_base"), tokens.ForModel("gpt-4o") and the client's counting find
// the real tokenizer. It is a module of its own so that the SDK does not carry the
// tokenizer, nor the Go version it needs (1.26), for programs that do not count.
//
// The vocabularies are compiled into the binary (about 12 MB of it for the two), from
// github.com/tiktoken-go/tokenizer: nothing is downloaded, ever. Importing costs a few
// kilobytes of heap; each vocabulary is built on the first Count that needs it — about 7 MB of
// heap and 20 ms for o200k_base, 3.5 MB and 7 ms for cl100k_base — and kept for the life of
// the program. Counting takes about 0.3 ms per 1,000 tokens on one core of the machine the
// figures in the README come from. Each encoding is registered behind tokens.Cached, with
// CacheEntries entries: a text of tokens.CachedMinBytes or more that was counted before (the
// system prompt, the tool definitions, the earlier turns of a conversation) is looked up by
// its hash instead, in well under a microsecond. Text is counted as the API receives it: invalid UTF-8 as
// U+FFFD (encoding/json sends it so), special-token markers as ordinary text.
package tiktoken

import (
	"sync"

	"github.com/steadyllm/steady/tokens"
	"github.com/tiktoken-go/tokenizer"
	"github.com/tiktoken-go/tokenizer/codec"
)

// CacheEntries is how many counts of long texts each registered encoding keeps
// (tokens.Cached): 4,096 entries, 64 KiB per encoding, allocated on its first count of a
// text of tokens.CachedMinBytes or more.
const CacheEntries = 4096

// The encodings, uncached; init registers them behind tokens.Cached.
var (
	o200k  = &lazy{name: tokens.O200kBase, build: codec.NewO200kBase}
	cl100k = &lazy{name: tokens.Cl100kBase, build: codec.NewCl100kBase}
)

func init() {
	tokens.Register(tokens.Cached(o200k, CacheEntries))
	tokens.Register(tokens.Cached(cl100k, CacheEntries))
}

// lazy is an encoding whose vocabulary is built on its first Count: a program that imports
// the package and never counts pays for neither vocabulary.
type lazy struct {
	name  string
	build func() *codec.Codec
	once  sync.Once
	codec *codec.Codec
}

// Name returns the encoding's name.
func (l *lazy) Name() string { return l.name }

// Count returns the number of tokens text encodes to.
func (l *lazy) Count(text string) int {
	if text == "" {
		return 0
	}
	l.once.Do(func() {
		c := l.build()
		c.SetErrorMode(tokenizer.ErrorModeReplace)
		l.codec = c
	})
	n, err := l.codec.Count(text)
	if err != nil {
		// The split expression has no timeout and replacement accepts any input, so the
		// library returns no error today; should a version start to, four bytes a token
		// keeps the count an estimate rather than zero.
		return (len(text) + 3) / 4
	}
	return n
}
