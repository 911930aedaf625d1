package main

// The docs checker's link check (see docs_check_test.go for the rest):
// every relative link resolves to a file, and its #anchor to a heading
// under GitHub's slug rule.

import (
	"fmt"
	"html"
	"io/fs"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

var (
	// linkOpen is an inline link's or image's text, one level of brackets
	// inside allowed, up to the ( of its destination.
	linkOpen   = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(`)
	refDef     = regexp.MustCompile(`(?m)^ {0,3}\[([^\]]+)\]:[ \t]*(<[^>]*>|\S+)`)
	refLink    = regexp.MustCompile(`\[(?:[^\[\]]|\[[^\[\]]*\])*\]\[([^\]]*)\]`)
	htmlLink   = regexp.MustCompile(`(?i)<(?:a|img)\b[^>]*?\s(?:href|src)\s*=\s*"([^"]*)"`)
	hasScheme  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	spaceRunRe = regexp.MustCompile(`\s+`)
)

// checkLinks: every relative link, image and reference definition outside
// code resolves to a file (or directory) of the repository, and its
// #anchor, in a markdown file, to one of that file's headings. Links with
// a scheme (http:, https:, mailto:) are not checked.
func checkLinks(fsys fs.FS, name, content string) []docProblem {
	text := proseText(content)
	var out []docProblem
	cache := map[string]map[string]bool{}
	check := func(offset int, target string) {
		if msg := checkTarget(fsys, name, content, target, cache); msg != "" {
			out = append(out, docProblem{name, lineAt(text, offset), msg})
		}
	}
	// Searched again from just after each match's start, so that the image
	// in [![alt](img.png)](target) is found too; a destination is checked once.
	seen := map[int]bool{}
	for from := 0; ; {
		m := linkOpen.FindStringIndex(text[from:])
		if m == nil {
			break
		}
		start, dest := from+m[0], from+m[1]
		if target, ok := linkDestination(text[dest:]); ok && !seen[dest] {
			seen[dest] = true
			check(dest, target)
		}
		from = start + 1
	}
	defined := map[string]bool{}
	for _, m := range refDef.FindAllStringSubmatchIndex(text, -1) {
		if strings.HasPrefix(text[m[2]:m[3]], "^") {
			continue // a footnote's text, not a link
		}
		defined[refLabel(text[m[2]:m[3]])] = true
		check(m[4], strings.Trim(text[m[4]:m[5]], "<>"))
	}
	for _, m := range refLink.FindAllStringSubmatchIndex(text, -1) {
		label := text[m[2]:m[3]]
		if label == "" { // [label][]
			label = text[m[0]+1 : m[2]-2]
		}
		if !defined[refLabel(label)] {
			out = append(out, docProblem{name, lineAt(text, m[0]), fmt.Sprintf("link %s: no reference [%s]: defined", text[m[0]:m[1]], label)})
		}
	}
	for _, m := range htmlLink.FindAllStringSubmatchIndex(text, -1) {
		check(m[2], html.UnescapeString(text[m[2]:m[3]]))
	}
	return out
}

func refLabel(s string) string {
	return strings.ToLower(spaceRunRe.ReplaceAllString(strings.TrimSpace(s), " "))
}

// linkDestination reads an inline link's destination from just after its
// "(": <...> or a run without spaces and with balanced parentheses, then an
// optional title, then ")". ok is false when that is not what follows
// (CommonMark does not make a link of it either).
func linkDestination(s string) (target string, ok bool) {
	s = strings.TrimLeft(s, " \t\n")
	var i int
	if strings.HasPrefix(s, "<") {
		end := strings.IndexAny(s, ">\n")
		if end < 0 || s[end] != '>' {
			return "", false
		}
		target, i = s[1:end], end+1
	} else {
		depth := 0
	loop:
		for ; i < len(s); i++ {
			switch c := s[i]; {
			case c == '(':
				depth++
			case c == ')' && depth == 0, c == ' ', c == '\t', c == '\n':
				break loop
			case c == ')':
				depth--
			}
		}
		target = s[:i]
	}
	rest := strings.TrimLeft(s[i:], " \t\n")
	if rest != "" && strings.IndexByte(`"'(`, rest[0]) >= 0 {
		closing := map[byte]byte{'"': '"', '\'': '\'', '(': ')'}[rest[0]]
		end := strings.IndexByte(rest[1:], closing)
		if end < 0 {
			return "", false
		}
		rest = strings.TrimLeft(rest[end+2:], " \t\n")
	}
	return target, strings.HasPrefix(rest, ")")
}

// checkTarget is "" when a link's target from file name resolves, or what
// is wrong with it. cache holds the anchors of the files read so far.
func checkTarget(fsys fs.FS, name, content, target string, cache map[string]map[string]bool) string {
	if target == "" {
		return "empty link target"
	}
	if hasScheme.MatchString(target) || strings.HasPrefix(target, "//") {
		return "" // absolute: http(s), mailto; not checked
	}
	p, anchor, _ := strings.Cut(target, "#")
	p, _, _ = strings.Cut(p, "?")
	if u, err := url.PathUnescape(p); err == nil {
		p = u
	}
	if a, err := url.PathUnescape(anchor); err == nil {
		anchor = a
	}
	file := name
	switch {
	case strings.HasPrefix(p, "/"): // GitHub: from the repository's root
		file = path.Clean(p[1:])
	case p != "":
		file = path.Join(path.Dir(name), p)
	}
	if file == ".." || strings.HasPrefix(file, "../") {
		return fmt.Sprintf("link %s: %s is outside the repository", target, file)
	}
	info, err := fs.Stat(fsys, file)
	if file == name {
		err = nil // the file being checked, which may not be on disk (a test's snippet)
	}
	if err != nil {
		return fmt.Sprintf("link %s: no file %s", target, file)
	}
	if anchor == "" || (info != nil && info.IsDir()) || !strings.HasSuffix(file, ".md") {
		return "" // an anchor in a non-markdown file (#L12) is GitHub's viewer's
	}
	if cache[file] == nil {
		text := content
		if file != name {
			b, err := fs.ReadFile(fsys, file)
			if err != nil {
				return fmt.Sprintf("link %s: %v", target, err)
			}
			text = string(b)
		}
		cache[file] = anchors(text)
	}
	if !cache[file][anchor] {
		return fmt.Sprintf("link %s: no heading #%s in %s", target, anchor, file)
	}
	return ""
}

var (
	atxHeading  = regexp.MustCompile(`^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	setextUnder = regexp.MustCompile(`^ {0,3}(?:=+|-+)[ \t]*$`)
	htmlAnchor  = regexp.MustCompile(`(?i)<a\s[^>]*?\b(?:id|name)\s*=\s*"([^"]+)"`)
)

// anchors are the #fragments a markdown file's headings get on GitHub
// (slug), and those of its <a id="..."> or <a name="...">.
func anchors(content string) map[string]bool {
	lines := strings.Split(content, "\n")
	kinds := classify(lines)
	var headings []string
	para := []string{} // the paragraph so far, for a setext heading
	for i, line := range lines {
		if kinds[i] != proseLine || strings.TrimSpace(line) == "" {
			para = para[:0]
			continue
		}
		if m := atxHeading.FindStringSubmatch(line); m != nil {
			headings, para = append(headings, m[1]), para[:0]
			continue
		}
		if setextUnder.MatchString(line) && len(para) > 0 && !listMarker.MatchString(para[0]) {
			headings, para = append(headings, strings.Join(para, " ")), para[:0]
			continue
		}
		para = append(para, strings.TrimSpace(line))
	}
	out := map[string]bool{}
	seen := map[string]int{}
	for _, h := range headings {
		out[uniqueSlug(seen, slug(headingText(h)))] = true
	}
	for _, m := range htmlAnchor.FindAllStringSubmatch(proseText(content), -1) {
		out[m[1]] = true
	}
	return out
}

// uniqueSlug is github-slugger's: a slug seen before gets -1, -2, ...,
// skipping any that a heading already has.
func uniqueSlug(seen map[string]int, s string) string {
	orig := s
	for {
		if _, ok := seen[s]; !ok {
			break
		}
		seen[orig]++
		s = orig + "-" + strconv.Itoa(seen[orig])
	}
	seen[s] = 0
	return s
}

// slug is GitHub's anchor for a heading's text: lowercase, every character
// but letters, digits, spaces, hyphens and underscores dropped, each space
// a hyphen.
func slug(text string) string {
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

var (
	codeSpan  = regexp.MustCompile("(`+)(.+?)(`+)")
	inlineImg = regexp.MustCompile(`!\[([^\]]*)\]\([^)]*\)`)
	inlineLnk = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)|\[([^\]]*)\]\[[^\]]*\]`)
	htmlTag   = regexp.MustCompile(`</?[A-Za-z][^>]*>`)
	emphOpen  = regexp.MustCompile(`(^|[^\pL\pN_])_+`)
	emphClose = regexp.MustCompile(`_+($|[^\pL\pN_])`)
	escaped   = regexp.MustCompile("\\\\([!-/:-@\\[-`{-~])")
)

// headingText is a heading's text as rendered, the text GitHub slugs: the
// content of code spans as is; elsewhere links and images reduced to their
// text, HTML tags, escapes, entities and _emphasis_ underscores resolved.
func headingText(h string) string {
	var b strings.Builder
	rest := h
	for {
		m := codeSpan.FindStringSubmatchIndex(rest)
		if m == nil || rest[m[2]:m[3]] != rest[m[6]:m[7]] {
			b.WriteString(renderInline(rest))
			return b.String()
		}
		b.WriteString(renderInline(rest[:m[0]]))
		code := rest[m[4]:m[5]]
		if len(code) > 1 && code[0] == ' ' && code[len(code)-1] == ' ' {
			code = code[1 : len(code)-1]
		}
		b.WriteString(code)
		rest = rest[m[1]:]
	}
}

func renderInline(s string) string {
	s = inlineImg.ReplaceAllString(s, "$1")
	s = inlineLnk.ReplaceAllString(s, "$1$2")
	s = htmlTag.ReplaceAllString(s, "")
	s = emphOpen.ReplaceAllString(s, "$1")
	s = emphClose.ReplaceAllString(s, "$1")
	s = escaped.ReplaceAllString(s, "$1")
	return html.UnescapeString(s)
}
