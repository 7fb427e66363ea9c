package wire

import (
	"fmt"
	"mime"
	"net/http"
	"strings"
	"unicode"
)

// maxBodyMessage bounds the text BodyMessage takes from an error body.
const maxBodyMessage = 200

// BodyMessage makes a short, safe message out of an error body that is not the provider's
// JSON error envelope (a proxy's page, a load balancer's plain text): the status text, plus
// at most 200 bytes of the body on one line. An HTML page is never shown, only its size.
func BodyMessage(status int, body []byte, contentType string) string {
	text := http.StatusText(status)
	if text == "" {
		text = fmt.Sprintf("HTTP %d", status)
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	trimmed := strings.TrimSpace(string(body))
	switch {
	case trimmed == "":
		return text
	case mt == "text/html" || strings.HasPrefix(trimmed, "<"):
		return fmt.Sprintf("%s (HTML error page, %d bytes, not shown)", text, len(body))
	}
	line := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, trimmed)
	if len(line) > maxBodyMessage {
		line = strings.ToValidUTF8(line[:maxBodyMessage], "") + "…"
	}
	return text + ": " + line
}
