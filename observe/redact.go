package observe

import (
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"
)

// maxErrorText bounds the error text put in a log record or a span status.
const maxErrorText = 300

var (
	// urlPattern finds absolute URLs, which may carry a key in their query or userinfo.
	urlPattern = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s"'<>]+`)
	// secretPatterns find credentials in free text: bearer tokens, key=value pairs and the
	// sk-… keys of OpenAI and Anthropic.
	secretPatterns = []*regexp.Regexp{
		regexp.MustCompile(`(?i)(bearer\s+)[^\s"',;]+`),
		regexp.MustCompile(`(?i)((?:api[-_]?key|x-api-key|authorization|access[-_]?token|token|secret|password)\s*[=:]\s*)[^\s"',;&]+`),
		regexp.MustCompile(`\bsk-[A-Za-z0-9_\-]{6,}`),
	}
)

// safeText returns an error's text fit for logs and traces. The pipeline's and the providers'
// errors already name no URL and no key; this is the second line of defence, for errors from
// elsewhere (a custom transport or provider): URLs shrink to scheme://host, credentials that
// look like credentials become [REDACTED], and the text is cut to a few hundred bytes.
func safeText(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if strings.Contains(s, "://") {
		s = urlPattern.ReplaceAllStringFunc(s, func(raw string) string {
			u, perr := url.Parse(raw)
			if perr != nil || u.Host == "" {
				return "[url]"
			}
			return u.Scheme + "://" + u.Host
		})
	}
	for i, re := range secretPatterns {
		if i == len(secretPatterns)-1 {
			s = re.ReplaceAllString(s, "sk-[REDACTED]")
		} else {
			s = re.ReplaceAllString(s, "${1}[REDACTED]")
		}
	}
	if len(s) > maxErrorText {
		cut := maxErrorText
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
