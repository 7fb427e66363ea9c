package mocks

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// features is what a chat request asks for beyond text, in either wire format, and what the
// fake answers with: a JSON value for a schema, a call of the tool the request forces,
// reasoning for a thinking budget or an effort, cache usage for a cacheable prompt.
type features struct {
	schema     json.RawMessage // the structured output's schema, nil for none
	forceTool  string          // the tool the model must call ("" for none)
	toolSchema json.RawMessage // its parameters
	thinking   bool            // Anthropic extended thinking, or a reasoning effort
	cacheable  bool            // the prompt holds a cache breakpoint (Anthropic)
	prefix     string          // the prompt, for the prompt cache
}

// instance returns a small JSON value that matches schema: every property of an object (the
// required ones at least), the first enum value, "text", 1, true, one item of an array.
func instance(schema json.RawMessage) any {
	var s struct {
		Type       any                        `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Items      json.RawMessage            `json:"items"`
		Enum       []any                      `json:"enum"`
		Const      any                        `json:"const"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return obj{}
	}
	if s.Const != nil {
		return s.Const
	}
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	typ, _ := s.Type.(string)
	if list, ok := s.Type.([]any); ok && len(list) > 0 {
		typ, _ = list[0].(string)
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
		if len(s.Items) > 0 {
			return []any{instance(s.Items)}
		}
		return []any{}
	}
	out := obj{}
	for name, p := range s.Properties {
		out[name] = instance(p)
	}
	return out
}

// instanceJSON is instance encoded.
func instanceJSON(schema json.RawMessage) string {
	b, _ := json.Marshal(instance(schema))
	return string(b)
}

// thought is the fake's reasoning about the last user message, and its signature.
func thought(lastUser string, seq int) (text, signature string) {
	text = "Thinking about: " + lastUser
	if len(text) > 120 {
		text = text[:120]
	}
	sum := sha256.Sum256([]byte(text))
	return text, fmt.Sprintf("sig_fake%d_%x", seq, sum[:8])
}

// cached reports whether the server has seen prompt before (a cache hit) and remembers it.
func (s *Server) cached(prompt string) bool {
	sum := sha256.Sum256([]byte(prompt))
	key := string(sum[:])
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	if s.cache == nil {
		s.cache = map[string]bool{}
	}
	hit := s.cache[key]
	s.cache[key] = true
	return hit
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
