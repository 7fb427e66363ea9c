package client_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// Finding the provider state the fake hands out, in what it writes and what it receives.

// scanState calls found with each piece of provider state in b that the fake hands out:
// encrypted reasoning content (enc_fake_<base64>), thinking signatures (sig_fake<n>_<hex>),
// and IDs (<kind>_fake<n>: responses, reasoning items, messages, output items, and those of
// items added later, which follow the same pattern). toolu_fake… is found too, and skipped by
// stateIn: a tool call's ID is the caller's transcript, which every provider reads. (A
// scanner rather than a regular expression: it reads every byte the fake writes and
// receives, and a regular expression took a third of the test's time.)
func scanState(b []byte, found func(tok []byte)) {
	isWord := func(c byte) bool {
		return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	run := func(i int, ok func(c byte) bool) int {
		for i < len(b) && ok(b[i]) {
			i++
		}
		return i
	}
	digit := func(c byte) bool { return '0' <= c && c <= '9' }
	for i := 0; ; {
		j := bytes.Index(b[i:], fakeMark)
		if j < 0 {
			return
		}
		j += i
		start := j
		for start > 0 && 'a' <= b[start-1] && b[start-1] <= 'z' {
			start--
		}
		i = j + len(fakeMark)
		if start == j || start > 0 && isWord(b[start-1]) {
			continue
		}
		mark := j + len(fakeMark)
		end, ok := 0, false
		if string(b[start:j]) == "enc" {
			if mark < len(b) && b[mark] == '_' {
				end = run(mark+1, func(c byte) bool { return isWord(c) && c != '_' || c == '+' || c == '/' || c == '=' })
				ok = end > mark+1
			}
		} else if n := run(mark, digit); n > mark {
			if string(b[start:j]) == "sig" && n < len(b) && b[n] == '_' {
				end = run(n+1, func(c byte) bool { return digit(c) || 'a' <= c && c <= 'f' })
				ok = end > n+1
			}
			if !ok {
				end, ok = n, n == len(b) || !isWord(b[n])
			}
		}
		if ok {
			found(b[start:end])
			i = end
		}
	}
}

var fakeMark = []byte("_fake")

// transcriptPrefixes are the token prefixes that are not provider state.
var transcriptPrefixes = []string{"toolu_fake"}

// tokenKind names the kind of a state token: "encrypted", "signature", or the ID's prefix.
func tokenKind(tok string) string {
	switch {
	case strings.HasPrefix(tok, "enc_fake_"):
		return "encrypted"
	case strings.HasPrefix(tok, "sig_fake"):
		return "signature"
	}
	kind, _, _ := strings.Cut(tok, "_fake")
	return kind + "-id"
}

// stateIn returns the provider state tokens in s, tool call IDs left out.
func stateIn(s string) []string {
	var out []string
	scanState([]byte(s), func(tok []byte) {
		for _, p := range transcriptPrefixes {
			if bytes.HasPrefix(tok, []byte(p)) {
				return
			}
		}
		out = append(out, string(tok))
	})
	return out
}

// The scanner finds what the regular expression it replaced finds, on the fake's own shapes
// and on near misses.
func TestStateLeak_ScannerFindsTheFakesState(t *testing.T) {
	re := regexp.MustCompile(`enc_fake_[A-Za-z0-9+/=]+|sig_fake[0-9]+_[0-9a-f]+|\b[a-z]+_fake[0-9]+\b`)
	for _, in := range []string{
		`{"id":"resp_fake0000000000000012","output":[{"type":"reasoning","id":"rs_fake0000000000000012",` +
			`"encrypted_content":"enc_fake_c2lnX2Zha2UxMl8zNGFi+/="}]}`,
		`data: {"type":"content_block_delta","delta":{"type":"signature_delta","signature":"sig_fake7_0a1b2c3d4e5f6789"}}`,
		`GET /v1/responses/resp_fake0000000000000003?stream=true&starting_after=4`,
		`"id":"toolu_fake00000009" "call_id":"call_00000009" "x_fake" "resp_fake" "Xresp_fake1" "resp_fake12a" "resp_fake12_"`,
		`"cmp_fake0000000000000001","conv_fake42" enc_fake_ sig_fake3 sig_fake3_ _fake1`,
	} {
		var got []string
		scanState([]byte(in), func(tok []byte) { got = append(got, string(tok)) })
		if want := re.FindAllString(in, -1); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s:\n got %q\nwant %q", in, got, want)
		}
	}
}
