package client_test

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Finding the provider state the fake hands out, in what it writes and what it receives.

// scanState calls found with each piece of provider state in b that the fake hands out:
// encrypted reasoning and compaction content (enc_fake_<base64>), thinking signatures
// (sig_fake<n>_<hex>), the encrypted content of its web search results (base64 of
// "steady-fake-search|<url>"), and IDs (<kind>_fake<hex>: responses, reasoning items,
// messages, output items, compaction items, conversations, server tool calls, and those of
// items added later, if they follow the pattern). toolu_fake… is found too, and skipped by
// stateIn: a tool call's ID is the caller's transcript, which every provider reads. (A
// scanner rather than a regular expression: it reads every byte the fake writes and receives,
// and a regular expression took a third of the test's time.)
func scanState(b []byte, found func(tok []byte)) {
	isWord := func(c byte) bool {
		return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	isB64 := func(c byte) bool { return isWord(c) && c != '_' || c == '+' || c == '/' || c == '=' }
	digit := func(c byte) bool { return '0' <= c && c <= '9' }
	hex := func(c byte) bool { return digit(c) || 'a' <= c && c <= 'f' }
	run := func(i int, ok func(c byte) bool) int {
		for i < len(b) && ok(b[i]) {
			i++
		}
		return i
	}
	for i := 0; ; {
		j := bytes.Index(b[i:], fakeMark)
		if j < 0 {
			break
		}
		j += i
		start := j
		for start > 0 && 'a' <= b[start-1] && b[start-1] <= 'z' {
			start--
		}
		mark := j + len(fakeMark)
		i = mark
		if start == j || start > 0 && isWord(b[start-1]) {
			continue
		}
		end, ok := 0, false
		switch kind := string(b[start:j]); {
		case kind == "enc":
			if mark < len(b) && b[mark] == '_' {
				end = run(mark+1, isB64)
				ok = end > mark+1
			}
		case kind == "sig":
			if d := run(mark, digit); d > mark && d < len(b) && b[d] == '_' {
				end = run(d+1, hex)
				ok = end > d+1
			}
		}
		if !ok {
			end = run(mark, hex)
			ok = end > mark && (end == len(b) || !isWord(b[end]))
		}
		if ok {
			found(b[start:end])
			i = end
		}
	}
	for i := 0; ; {
		j := bytes.Index(b[i:], searchMark)
		if j < 0 {
			return
		}
		end := run(i+j+len(searchMark), isB64)
		found(b[i+j : end])
		i = end
	}
}

// fakeMark is in every ID and encrypted content the fake writes, but its web search results'.
var fakeMark = []byte("_fake")

// searchMark starts the fake's encrypted content of a web search result: the base64 of
// "steady-fake-search".
var searchMark = []byte("c3RlYWR5LWZha2Utc2VhcmNo")

// mayHoldState reports whether b may hold state scanState finds.
func mayHoldState(b []byte) bool {
	return bytes.Contains(b, fakeMark) || bytes.Contains(b, searchMark)
}

// transcriptPrefixes are the token prefixes that are not provider state.
var transcriptPrefixes = []string{"toolu_fake"}

// tokenKind names the kind of a state token: "encrypted", "signature", or the ID's prefix.
func tokenKind(tok string) string {
	switch {
	case strings.HasPrefix(tok, "enc_fake_"):
		return "encrypted"
	case strings.HasPrefix(tok, "sig_fake"):
		return "signature"
	case strings.HasPrefix(tok, string(searchMark)):
		return "search-content"
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

// The scanner finds what the regular expressions it replaced find, on the fake's own shapes
// and on near misses.
func TestStateLeak_ScannerFindsTheFakesState(t *testing.T) {
	re := regexp.MustCompile(`enc_fake_[A-Za-z0-9+/=]+|sig_fake[0-9]+_[0-9a-f]+|\b[a-z]+_fake[0-9a-f]+\b|c3RlYWR5LWZha2Utc2VhcmNo[A-Za-z0-9+/=]*`)
	for _, in := range []string{
		`{"id":"resp_fake0000000000000012","output":[{"type":"reasoning","id":"rs_fake0000000000000012",` +
			`"encrypted_content":"enc_fake_c2lnX2Zha2UxMl8zNGFi+/="}]}`,
		`data: {"type":"content_block_delta","delta":{"type":"signature_delta","signature":"sig_fake7_0a1b2c3d4e5f6789"}}`,
		`GET /v1/responses/resp_fake0000000000000003?stream=true&starting_after=4`,
		`"id":"toolu_fake00000009" "call_id":"call_00000009" "x_fake" "resp_fake" "Xresp_fake1" "resp_fake12g" "resp_fake12_"`,
		`"cmp_fake0000000000000001","conv_fake42" enc_fake_ sig_fake3 sig_fake3_ sig_fake3abc _fake1 fp_fake`,
		`{"type":"server_tool_use","id":"srvtoolu_fake0a1b2c3d4e5f6789"},{"type":"web_search_result",` +
			`"encrypted_content":"c3RlYWR5LWZha2Utc2VhcmNofGh0dHBzOi8vc2VhcmNoLmV4YW1wbGUvMC8x"}`,
	} {
		var got []string
		scanState([]byte(in), func(tok []byte) { got = append(got, string(tok)) })
		want := re.FindAllString(in, -1)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) || len(want) == 0 {
			t.Errorf("%s:\n got %q\nwant %q", in, got, want)
		}
		if !mayHoldState([]byte(in)) {
			t.Errorf("%s: mayHoldState false", in)
		}
	}
}
