// Package redact keeps secrets out of text that steady copies from a server or an error into
// something a person or a system may read: error messages and fields, log records, span
// attributes. It is the one home of that rule for the providers, the client and observe.
//
// Text is scrubbed before it is shortened, so a key cut in half by a length limit can never
// survive as a prefix, and control characters are replaced so a hostile value cannot forge a
// log line.
package redact

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Mask replaces every secret.
const Mask = "[REDACTED]"

// MinSecretLen is the shortest configured secret that is searched for: shorter values would
// match ordinary words and are not real API keys.
const MinSecretLen = 5

// minPartial is the shortest start of a configured secret that is redacted on its own: a
// server (or a limit) that cut the key short must not leak its first characters either.
const minPartial = 8

var (
	// urlPattern finds absolute URLs, which may carry a key in their query or userinfo.
	urlPattern = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s"'<>]+`)
	// shapes find credentials in free text whoever they belong to: bearer tokens, key=value
	// pairs and the sk-… keys of OpenAI and Anthropic.
	bearer   = regexp.MustCompile(`(?i)(bearer\s+)[^\s"',;]+`)
	keyValue = regexp.MustCompile(`(?i)((?:api[-_]?key|x-api-key|authorization|access[-_]?token|token|secret|password)["']?\s*[=:]\s*["']?)[^\s"',;&]+`)
	skKey    = regexp.MustCompile(`\bsk-[A-Za-z0-9_\-]{6,}`)
)

// Scrubber removes configured secrets and anything shaped like a credential from text. The
// zero value removes only shapes. It is safe for concurrent use.
type Scrubber struct {
	secrets []string
}

// New returns a Scrubber for the given secrets (API keys); empty and too short ones are
// ignored.
func New(secrets ...string) Scrubber {
	var s Scrubber
	for _, v := range secrets {
		if len(v) >= MinSecretLen {
			s.secrets = append(s.secrets, v)
		}
	}
	return s
}

// Redact returns text without the configured secrets (whole, or any start of one at least
// minPartial long), with every URL cut to its scheme://host, and without credential shapes.
func (s Scrubber) Redact(text string) string {
	if strings.Contains(text, "://") {
		text = urlPattern.ReplaceAllStringFunc(text, func(raw string) string {
			u, err := url.Parse(raw)
			if err != nil || u.Host == "" {
				return "[url]"
			}
			return u.Scheme + "://" + u.Host
		})
	}
	text = s.redactKeys(text)
	if hasFold(text, "bearer") {
		text = bearer.ReplaceAllString(text, "${1}"+Mask)
	}
	if strings.ContainsAny(text, "=:") && (hasFold(text, "key") || hasFold(text, "token") ||
		hasFold(text, "secret") || hasFold(text, "password") || hasFold(text, "authorization")) {
		text = keyValue.ReplaceAllString(text, "${1}"+Mask)
	}
	return text
}

// Text makes text safe to show: invalid UTF-8 replaced (first, so that dropping a byte later
// can never join the two halves of a secret), then Redact, then every control character
// (newlines included) replaced by a space, then the result cut to at most max bytes on a rune
// boundary with "…" appended when cut. max <= 0 means no cut.
func (s Scrubber) Text(text string, max int) string {
	if plain(text) {
		// Most fields are IDs and model names. Letters, digits, '.', '_' and '-' hold no URL,
		// bearer token, key=value pair, control character or invalid UTF-8: only a key itself.
		return Clip(s.redactKeys(text), max)
	}
	return Clip(Line(s.Redact(strings.ToValidUTF8(text, "\uFFFD"))), max)
}

// plain reports whether text holds only ASCII letters, digits, '.', '_' and '-'.
func plain(text string) bool {
	for i := 0; i < len(text); i++ {
		c := text[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// redactKeys is Redact for plain text: the configured secrets and sk-… keys.
func (s Scrubber) redactKeys(text string) string {
	for _, secret := range s.secrets {
		text = redactSecret(text, secret)
	}
	if strings.Contains(text, "sk-") {
		text = skKey.ReplaceAllString(text, "sk-"+Mask)
	}
	return text
}

// Line replaces control characters with spaces, so text stays on one line.
func Line(text string) string {
	if !strings.ContainsFunc(text, unicode.IsControl) {
		return text
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, text)
}

// Clip cuts text to at most max bytes on a rune boundary, appending "…" when it cut; invalid
// UTF-8 is dropped from the cut end. max <= 0 means no cut.
func Clip(text string, max int) string {
	if max <= 0 || len(text) <= max {
		return text
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return strings.ToValidUTF8(text[:cut], "") + "…"
}

// redactSecret masks every occurrence in text of secret, and of any start of it at least
// minPartial long (or the whole secret, if shorter).
func redactSecret(text, secret string) string {
	probe := secret[:min(len(secret), minPartial)]
	if !strings.Contains(text, probe) {
		return text
	}
	var b strings.Builder
	for {
		i := strings.Index(text, probe)
		if i < 0 {
			b.WriteString(text)
			return b.String()
		}
		n := len(probe)
		for n < len(secret) && i+n < len(text) && text[i+n] == secret[n] {
			n++
		}
		b.WriteString(text[:i])
		b.WriteString(Mask)
		text = text[i+n:]
	}
}

// hasFold reports whether text contains word in any case (ASCII).
func hasFold(text, word string) bool {
	n := len(word)
	for i := 0; i+n <= len(text); i++ {
		if strings.EqualFold(text[i:i+n], word) {
			return true
		}
	}
	return false
}

// LooksLikeKey reports whether s looks like a credential rather than a name: a known key
// prefix, or one long run of letters and digits (no separator at all) that holds digits, or
// is hexadecimal. Names of environment variables (OPENAI_API_KEY), model names
// (gpt-4o-mini-2024-07-18), file paths and sentences do not.
func LooksLikeKey(s string) bool {
	if len(s) < 16 {
		return false
	}
	for _, prefix := range []string{"sk-", "sk_", "pk-", "rk-", "xai-", "gsk_", "hf_", "AIza", "Bearer "} {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	var lower, upper, digit, hex int
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
			lower++
		case r >= 'A' && r <= 'Z':
			upper++
		case r >= '0' && r <= '9':
			digit++
		default:
			return false // not one run of letters and digits
		}
		if r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F' {
			hex++
		}
	}
	switch {
	case hex == len(s) && len(s) >= 24:
		return true
	case len(s) >= 20 && digit > 0 && lower+upper > 0:
		return true
	}
	return lower > 0 && upper > 0 && digit > 0 // mixed case and digits, 16 or more
}

// credentialNames are query parameter names that carry a credential, lower case without
// separators.
var credentialNames = map[string]bool{
	"key": true, "apikey": true, "xapikey": true, "token": true, "accesstoken": true, "authtoken": true,
	"secret": true, "clientsecret": true, "password": true, "pass": true, "sig": true, "signature": true,
	"auth": true, "authorization": true, "code": true, "credential": true, "credentials": true, "bearer": true,
}

// CheckBaseURL returns why raw cannot be an API's base URL, or "" when it can: it must be an
// absolute http or https URL with a host, and carry no credential (no user:password@, no
// query parameter that names or looks like one). The reason never repeats raw, which may
// hold the very secret that makes it unusable.
func CheckBaseURL(raw string) string {
	const absolute = `must be an absolute http or https URL, such as "https://api.example.com/v1"`
	u, err := url.Parse(strings.TrimSpace(raw))
	switch {
	case err != nil:
		return absolute + " (it does not parse as a URL)"
	case u.User != nil:
		return "must not contain credentials (user:password@): put the API key in an environment variable and name that variable in APIKeyEnv"
	case u.Scheme != "http" && u.Scheme != "https":
		return absolute
	case u.Host == "":
		return absolute + " (it has no host)"
	}
	for name, values := range u.Query() {
		norm := strings.ToLower(strings.NewReplacer("-", "", "_", "", ".", "").Replace(name))
		suspicious := credentialNames[norm]
		for _, v := range values {
			suspicious = suspicious || LooksLikeKey(v)
		}
		if suspicious {
			return "must not carry a credential in its query: put the API key in an environment variable and name that variable in APIKeyEnv"
		}
	}
	return ""
}

// Safe renders text taken from a caller or a server (a request ID, a header name) for an error
// message: control characters and invalid UTF-8 become Go escapes (\n, \x00, \u2028…), so the
// text cannot forge a line or hide a character, and the result is at most max bytes, cut on an
// escape boundary with "…" appended. max <= 0 means no cut.
func Safe(text string, max int) string {
	clean := true
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		if (r == utf8.RuneError && n == 1) || unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			clean = false
			break
		}
		i += n
	}
	if clean && (max <= 0 || len(text) <= max) {
		return text
	}
	var b strings.Builder
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		piece := text[i : i+n]
		switch {
		case r == utf8.RuneError && n == 1:
			piece = fmt.Sprintf(`\x%02x`, text[i])
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
			q := strconv.QuoteRune(r)
			piece = q[1 : len(q)-1]
		}
		if max > 0 && b.Len()+len(piece) > max {
			b.WriteString("…")
			break
		}
		b.WriteString(piece)
		i += n
	}
	return b.String()
}
