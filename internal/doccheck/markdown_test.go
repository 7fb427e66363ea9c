package doccheck

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// block is one fenced code block of a Markdown file.
type block struct {
	line   int    // 1-based line of its opening fence
	lang   string // the first word of the info string: go, json, sh…
	text   string // its content, without the fences, ending in a newline when not empty
	source string // what the comment before it names: "path" or "path#region"; "" for none
}

var sourceComment = regexp.MustCompile(`^<!--\s*source:\s*(\S+)\s*-->$`)

// blocks returns the fenced code blocks of md (``` or ~~~ fences, indented or not), each with
// the source named by the comment on the last non-blank line before it. An unclosed fence is
// an error: everything after it would silently stop being checked.
func blocks(md string) ([]block, error) {
	lines := strings.Split(md, "\n")
	var out []block
	prev := "" // the last non-blank line outside a block
	for i := 0; i < len(lines); i++ {
		fence, indent, info, ok := openingFence(lines[i])
		if !ok {
			if t := strings.TrimSpace(lines[i]); t != "" {
				prev = t
			}
			continue
		}
		b := block{line: i + 1, lang: firstWord(info)}
		if m := sourceComment.FindStringSubmatch(prev); m != nil {
			b.source = m[1]
		}
		var body strings.Builder
		closed := false
		for i++; i < len(lines); i++ {
			t := strings.TrimLeft(lines[i], " ")
			if strings.HasPrefix(t, fence) && strings.TrimSpace(strings.TrimLeft(t, fence[:1])) == "" {
				closed = true
				break
			}
			body.WriteString(dedentBy(lines[i], indent))
			body.WriteByte('\n')
		}
		if !closed {
			return nil, fmt.Errorf("line %d: the code block opened here is never closed", b.line)
		}
		b.text = body.String()
		out = append(out, b)
		prev = ""
	}
	return out, nil
}

// openingFence reports whether line opens a fenced block: up to three spaces (more inside a
// list item; any run of spaces is accepted here), then three or more backticks or tildes.
func openingFence(line string) (fence string, indent int, info string, ok bool) {
	t := strings.TrimLeft(line, " ")
	indent = len(line) - len(t)
	for _, c := range []byte{'`', '~'} {
		n := 0
		for n < len(t) && t[n] == c {
			n++
		}
		if n >= 3 {
			return t[:n], indent, strings.TrimSpace(t[n:]), true
		}
	}
	return "", 0, "", false
}

func dedentBy(line string, n int) string {
	for i := 0; i < n && strings.HasPrefix(line, " "); i++ {
		line = line[1:]
	}
	return line
}

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

const beginMarker, endMarker = "// docs:begin ", "// docs:end "

// region returns the lines of a Go source between "// docs:begin name" and "// docs:end name",
// without the lines of other regions' markers inside it, less the indentation they all share.
func region(src, name string) (string, error) {
	lines := strings.Split(src, "\n")
	start, end := -1, -1
	for i, l := range lines {
		switch strings.TrimSpace(l) {
		case beginMarker + name:
			if start >= 0 {
				return "", fmt.Errorf("region %q begins twice", name)
			}
			start = i
		case endMarker + name:
			if end >= 0 {
				return "", fmt.Errorf("region %q ends twice", name)
			}
			end = i
		}
	}
	if start < 0 || end < 0 || end < start {
		return "", fmt.Errorf("no region %q (// docs:begin %s … // docs:end %s)", name, name, name)
	}
	var kept []string
	for _, l := range lines[start+1 : end] {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, beginMarker) || strings.HasPrefix(t, endMarker) {
			continue
		}
		kept = append(kept, l)
	}
	return dedent(kept), nil
}

// dedent removes the leading whitespace that every non-blank line shares and joins the lines,
// each ending in a newline.
func dedent(lines []string) string {
	common := ""
	first := true
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		ws := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if first {
			common, first = ws, false
			continue
		}
		for !strings.HasPrefix(ws, common) {
			common = common[:len(common)-1]
		}
	}
	var b strings.Builder
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			b.WriteString(strings.TrimPrefix(l, common))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// link is one inline link of a Markdown file.
type link struct {
	line   int
	target string
}

var (
	linkPattern   = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeSpan      = regexp.MustCompile("`+[^`]*`+")
	headingPrefix = regexp.MustCompile(`^#{1,6}\s+`)
	htmlAnchor    = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
)

// links returns the inline links of md outside code blocks and code spans.
func links(md string) []link {
	var out []link
	eachProseLine(md, func(n int, line string) {
		for _, m := range linkPattern.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			out = append(out, link{line: n, target: m[1]})
		}
	})
	return out
}

// anchors returns the anchors GitHub gives the headings of md (and any <a id> in it).
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	eachProseLine(md, func(_ int, line string) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		if !headingPrefix.MatchString(line) {
			return
		}
		s := slug(headingPrefix.ReplaceAllString(line, ""))
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	})
	return out
}

var inlineLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// slug is GitHub's anchor for a heading: the rendered text in lower case, without anything but
// letters, digits, spaces, hyphens and underscores, spaces turned into hyphens.
func slug(heading string) string {
	text := inlineLink.ReplaceAllString(strings.TrimSpace(heading), "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// eachProseLine calls fn with each line of md that is outside a fenced code block.
func eachProseLine(md string, fn func(n int, line string)) {
	inFence := ""
	for i, line := range strings.Split(md, "\n") {
		if inFence != "" {
			t := strings.TrimLeft(line, " ")
			if strings.HasPrefix(t, inFence) && strings.TrimSpace(strings.TrimLeft(t, inFence[:1])) == "" {
				inFence = ""
			}
			continue
		}
		if fence, _, _, ok := openingFence(line); ok {
			inFence = fence
			continue
		}
		fn(i+1, line)
	}
}
