package main

// The docs checker behind TestDocs (docs_test.go): plain functions over a
// markdown file's name and content that return the problems they find, so
// that each check can be shown failing on a snippet. Files are named by
// slash paths relative to the repository root, and looked up in an fs.FS
// of it (fstest.MapFS in the tests of the checker).

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
)

// docProblem is one thing wrong in a markdown file, at FILE:LINE.
type docProblem struct {
	File string
	Line int
	Msg  string
}

func (p docProblem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg) }

// checkDoc runs the three checks on one file. parse parses a command's
// arguments (those after "outboxlab") with the CLI's flag sets.
func checkDoc(fsys fs.FS, name, content string, parse func(args []string) error) []docProblem {
	var out []docProblem
	out = append(out, checkLinks(fsys, name, content)...)
	out = append(out, checkCommands(name, content, parse)...)
	return append(out, checkTestdataPaths(fsys, name, content)...)
}

// lineKind is what a line of markdown is to the checks.
type lineKind int

const (
	proseLine lineKind = iota // text, headings, blank lines
	fenceLine                 // a ``` or ~~~ line opening or closing a fenced block
	codeLine                  // inside a fenced block, or a 4-space indented block
)

var (
	listMarker = regexp.MustCompile(`^( *)([-*+]|[0-9]{1,9}[.)])( +|$)`)
	fenceOpen  = regexp.MustCompile("^ *(`{3,}|~{3,})(.*)$")
)

// classify tells each line's kind, after CommonMark: a fence opens a block
// that the same fence, at least as long, closes; an indented block is
// indented 4 spaces more than the list item it is in (if any), and cannot
// interrupt a paragraph (an indented line right after a paragraph's line
// goes on with the paragraph).
func classify(lines []string) []lineKind {
	kinds := make([]lineKind, len(lines))
	var fence string // the open fence's run of ` or ~, "" when none
	var lists []int  // content columns of the open list items, innermost last
	prevBlank, prevPara := true, false
	for i, raw := range lines {
		line := strings.ReplaceAll(raw, "\t", "    ")
		if fence != "" {
			if t := strings.TrimSpace(line); strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				kinds[i], fence, prevPara = fenceLine, "", false
			} else {
				kinds[i] = codeLine
			}
			continue
		}
		if strings.TrimSpace(line) == "" {
			kinds[i], prevBlank, prevPara = proseLine, true, false
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		base := 0
		if len(lists) > 0 {
			base = lists[len(lists)-1]
		}
		if indent >= base+4 && !prevPara {
			kinds[i], prevBlank = codeLine, false
			continue
		}
		m := listMarker.FindStringSubmatch(line)
		if prevBlank || m != nil { // a lazy continuation line stays in its item
			for len(lists) > 0 && indent < lists[len(lists)-1] {
				lists = lists[:len(lists)-1]
			}
		}
		prevBlank = false
		if m != nil {
			spaces := len(m[3])
			if spaces == 0 || spaces > 4 {
				spaces = 1
			}
			lists = append(lists, len(m[1])+len(m[2])+spaces)
		}
		rest := strings.TrimLeft(line[len(m0(m)):], " ")
		prevPara = !atxHeading.MatchString(line)
		if f := fenceOpen.FindStringSubmatch(rest); f != nil && !(f[1][0] == '`' && strings.Contains(f[2], "`")) {
			kinds[i], fence, prevPara = fenceLine, f[1], false
		}
	}
	return kinds
}

// m0 is a list marker match's whole text, "" for none.
func m0(m []string) string {
	if m == nil {
		return ""
	}
	return m[0]
}

// proseText is content with every code line emptied, and then code spans,
// backslash escapes and HTML comments blanked out, newlines kept: what is
// left is the text links and headings are read from, line for line.
func proseText(content string) string {
	lines := strings.Split(content, "\n")
	for i, k := range classify(lines) {
		if k != proseLine {
			lines[i] = ""
		}
	}
	b := []byte(strings.Join(lines, "\n"))
	blank := func(from, to int) {
		for j := from; j < to; j++ {
			if b[j] != '\n' {
				b[j] = ' '
			}
		}
	}
	for i := 0; i < len(b); {
		switch {
		case b[i] == '\\' && i+1 < len(b) && strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", b[i+1]) >= 0:
			blank(i, i+2)
			i += 2
		case bytes.HasPrefix(b[i:], []byte("<!--")):
			end := bytes.Index(b[i:], []byte("-->"))
			if end < 0 {
				end = len(b) - i - 3
			}
			blank(i, i+end+3)
			i += end + 3
		case b[i] == '`':
			n := runLen(b, i)
			if end := closingTicks(b, i+n, n); end >= 0 {
				blank(i, end+n)
				i = end + n
			} else {
				i += n
			}
		default:
			i++
		}
	}
	return string(b)
}

func runLen(b []byte, i int) int {
	n := 0
	for i+n < len(b) && b[i+n] == '`' {
		n++
	}
	return n
}

// closingTicks finds the run of exactly n backticks that closes a code
// span, before the paragraph ends (a blank line); -1 when there is none.
func closingTicks(b []byte, from, n int) int {
	for j := from; j < len(b); {
		switch {
		case b[j] == '`':
			m := runLen(b, j)
			if m == n {
				return j
			}
			j += m
		case b[j] == '\n':
			next, _, _ := bytes.Cut(b[j+1:], []byte("\n"))
			if len(bytes.TrimSpace(next)) == 0 {
				return -1
			}
			j++
		default:
			j++
		}
	}
	return -1
}

func lineAt(text string, offset int) int { return 1 + strings.Count(text[:offset], "\n") }

// testdataPath is a path token that starts with testdata/ (not a/testdata/
// or ../testdata/), up to a character a path does not have in these docs.
var testdataPath = regexp.MustCompile("(?:^|[^A-Za-z0-9_./-])(testdata/[^\\s`'\"()<>\\[\\]{}|,;:#]*)")

// checkTestdataPaths: every testdata/... path named anywhere in the file,
// code or prose, exists from the repository's root; a glob must match at
// least one file.
func checkTestdataPaths(fsys fs.FS, name, content string) []docProblem {
	var out []docProblem
	for i, line := range strings.Split(content, "\n") {
		for _, m := range testdataPath.FindAllStringSubmatch(line, -1) {
			p := path.Clean(strings.TrimRight(m[1], ".!?"))
			if strings.ContainsAny(p, "*?") {
				matches, err := fs.Glob(fsys, p)
				if err != nil || len(matches) == 0 {
					out = append(out, docProblem{name, i + 1, fmt.Sprintf("%s matches no file", p)})
				}
				continue
			}
			if _, err := fs.Stat(fsys, p); err != nil {
				out = append(out, docProblem{name, i + 1, fmt.Sprintf("no file %s", p)})
			}
		}
	}
	return out
}
