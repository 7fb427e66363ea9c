// Package headers holds the one rule of what an HTTP header can carry, shared by the client
// (which refuses a caller's header before anything is sent) and the resilience pipeline (which
// never counts a request Go's transport refused for its headers against the provider).
package headers

import "strings"

// ValidName reports whether name is an HTTP field name: a non-empty token (RFC 9110 5.6.2).
func ValidName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// BadValueByte returns the index of the first byte of v that an HTTP field value cannot carry
// — a control character other than tab: CR and LF would end the header, NUL is refused by
// servers — or -1 when there is none. Go's transport refuses the same bytes.
func BadValueByte(v string) int {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return i
		}
	}
	return -1
}

// Invalid returns the name of the first header of h that Go's transports refuse to send (its
// name is not a token, a value holds a control character, or, as HTTP/2 refuses them, an
// Upgrade header, a Transfer-Encoding other than chunked, or a Connection other than close or
// keep-alive), and whether there is one. h is keyed by canonical names, as http.Header is.
func Invalid(h map[string][]string) (string, bool) {
	for k, vs := range h {
		if !ValidName(k) {
			return k, true
		}
		for _, v := range vs {
			if BadValueByte(v) >= 0 {
				return k, true
			}
		}
	}
	if vv := h["Upgrade"]; len(vv) > 0 && vv[0] != "" && vv[0] != "chunked" {
		return "Upgrade", true
	}
	if vv := h["Transfer-Encoding"]; len(vv) > 0 && (len(vv) > 1 || vv[0] != "" && vv[0] != "chunked") {
		return "Transfer-Encoding", true
	}
	if vv := h["Connection"]; len(vv) > 0 && (len(vv) > 1 || vv[0] != "" && !strings.EqualFold(vv[0], "close") &&
		!strings.EqualFold(vv[0], "keep-alive")) {
		return "Connection", true
	}
	return "", false
}

// TransportOwned reports whether the header named name (canonical) is the transport's to set:
// a hop-by-hop or framing header that a caller's header option must not set, since the
// connection, not the request, decides it (HTTP/2 refuses most of them outright).
func TransportOwned(name string) bool {
	switch name {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade", "Te", "Trailer", "Host",
		"Content-Length":
		return true
	}
	return false
}
