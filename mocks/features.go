package mocks

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// features is what a chat request asks for beyond text, in either wire format, and what the
// fake answers with: a JSON value for a schema, a call of the tool the request forces,
// reasoning for a thinking budget or an effort, cache usage for a cacheable prompt.
type features struct {
	schema     json.RawMessage   // the structured output's schema, nil for none
	forceTool  string            // the tool the model must call ("" for none)
	toolSchema json.RawMessage   // its parameters
	thinking   bool              // Anthropic extended thinking, or a reasoning effort
	cacheable  bool              // the prompt holds a cache breakpoint (Anthropic)
	search     string            // the name of the request's web search tool (Anthropic's server tool), "" for none
	prefix     [sha256.Size]byte // the prompt's digest, for the prompt cache (see promptKey)
}

// promptKey is the digest of a prompt: system, then each message's role, ":" and raw
// content. It is hashed as it goes: building the prompt as one string with += in a loop
// copied it again for every message, work quadratic in the number of messages.
func promptKey(system json.RawMessage, msgs []message) [sha256.Size]byte {
	h := sha256.New()
	h.Write(system)
	for _, m := range msgs {
		io.WriteString(h, m.Role)
		io.WriteString(h, ":")
		h.Write(m.Content)
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}

// promptCacheSize is how many prompts the server remembers for its fake prompt cache; past it
// the oldest is forgotten (its next use is a cache write again), so that a long run of
// distinct prompts holds bounded memory.
const promptCacheSize = 4096

// instance returns a small JSON value that matches schema: every property of an object (the
// required ones at least), the first enum value, "text", 1, true, one item of an array. It
// walks the schema once (see scanner), so its work is linear in the schema's size however
// deep it nests; past MaxJSONDepth levels it gives up and answers {}.
func instance(schema json.RawMessage) any {
	s := scanner{b: schema}
	return s.instance(0)
}

// instance consumes one schema and returns its instance.
func (s *scanner) instance(depth int) any {
	if depth > MaxJSONDepth || s.peek() != '{' {
		s.skip()
		return obj{}
	}
	var (
		typ            string
		props          obj
		item, first, c any
		items, enum    bool
	)
	s.object(func(name []byte) {
		switch {
		case is(name, "type") && s.peek() == '"':
			typ = s.str()
		case is(name, "type") && s.peek() == '[':
			firstType := true // like the API, only the first type of a list counts
			s.array(func() {
				if firstType && s.peek() == '"' {
					typ = s.str()
				} else {
					s.skip()
				}
				firstType = false
			})
		case is(name, "properties"):
			s.object(func(prop []byte) {
				if props == nil {
					props = obj{}
				}
				props[string(prop)] = s.instance(depth + 1)
			})
		case is(name, "items"):
			item, items = s.instance(depth+1), true
		case is(name, "enum"):
			s.array(func() {
				if !enum {
					_ = json.Unmarshal(s.span(), &first)
					enum = true
					return
				}
				s.skip()
			})
		case is(name, "const"):
			_ = json.Unmarshal(s.span(), &c)
		default:
			s.skip()
		}
	})
	switch {
	case c != nil:
		return c
	case enum:
		return first
	}
	switch typ {
	case "string":
		return "text"
	case "integer", "number":
		return 1
	case "boolean":
		return true
	case "null":
		return nil
	case "array":
		if items {
			return []any{item}
		}
		return []any{}
	}
	if props == nil {
		return obj{}
	}
	return props
}

// instanceJSON is instance encoded.
func instanceJSON(schema json.RawMessage) string {
	b, _ := json.Marshal(instance(schema))
	return string(b)
}

// thought is the fake's reasoning about the last user message, and its signature.
func thought(lastUser string, seq int) (text, signature string) {
	const most = 120
	text = "Thinking about: " + lastUser[:min(len(lastUser), most)] // not a copy of a huge message
	if len(text) > most {
		text = text[:most]
	}
	sum := sha256.Sum256([]byte(text))
	return text, fmt.Sprintf("sig_fake%d_%x", seq, sum[:8])
}

// cached reports whether the server has seen the prompt whose promptKey is key before (a
// cache hit) and remembers it, among the last promptCacheSize prompts.
func (s *Server) cached(key [sha256.Size]byte) bool {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	if s.cache == nil {
		s.cache = map[[sha256.Size]byte]bool{}
	}
	if s.cache[key] {
		return true
	}
	if len(s.cacheOrder) == promptCacheSize {
		delete(s.cache, s.cacheOrder[s.cacheNext])
		s.cacheOrder[s.cacheNext] = key
		s.cacheNext = (s.cacheNext + 1) % promptCacheSize
	} else {
		s.cacheOrder = append(s.cacheOrder, key)
	}
	s.cache[key] = true
	return false
}

// checkImage refuses an image block the APIs would refuse: no source, base64 data that does
// not decode, an unknown media type.
func checkImage(source json.RawMessage) error {
	var src struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	}
	if json.Unmarshal(source, &src) != nil {
		return errors.New("image.source: invalid")
	}
	switch src.Type {
	case "base64":
		if _, err := base64.StdEncoding.DecodeString(src.Data); err != nil || src.Data == "" {
			return errors.New("image.source.data: not valid base64")
		}
		switch src.MediaType {
		case "image/png", "image/jpeg", "image/gif", "image/webp":
		default:
			return fmt.Errorf("image.source.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'")
		}
	case "url":
		if !strings.HasPrefix(src.URL, "http://") && !strings.HasPrefix(src.URL, "https://") {
			return errors.New("image.source.url: must be an http(s) URL")
		}
	default:
		return errors.New("image.source.type: Input should be 'base64' or 'url'")
	}
	return nil
}

// checkImageURL refuses an OpenAI image_url part the API would refuse.
func checkImageURL(u string) error {
	if strings.HasPrefix(u, "data:") {
		meta, data, ok := strings.Cut(strings.TrimPrefix(u, "data:"), ",")
		if !ok || !strings.HasSuffix(meta, ";base64") {
			return errors.New("Invalid image URL: a data URL must be base64")
		}
		if _, err := base64.StdEncoding.DecodeString(data); err != nil {
			return errors.New("Invalid image URL: the base64 data does not decode")
		}
		return nil
	}
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return errors.New("Invalid image URL: expected an http(s) or data URL")
	}
	return nil
}
