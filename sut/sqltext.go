package sut

import (
	"strconv"
	"strings"
)

// sqlScan walks SQL text the way the server's lexer does for what matters
// here: quoted strings, quoted identifiers, dollar-quoted bodies and comments
// are opaque; outside them it reports statement-ending semicolons and named
// parameters (@name).
type sqlToken struct {
	kind   byte // ';' or '@'
	offset int  // byte offset of the ';' or the '@'
	name   string
}

func scanSQL(sql string) []sqlToken {
	var toks []sqlToken
	i := 0
	for i < len(sql) {
		c := sql[i]
		switch {
		case c == '\'' && i > 0 && (sql[i-1] == 'E' || sql[i-1] == 'e') && (i == 1 || !isIdentChar(sql[i-2])):
			i = skipEscapeString(sql, i)
		case c == '\'' || c == '"':
			i = skipQuoted(sql, i, c)
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			if j := strings.IndexByte(sql[i:], '\n'); j >= 0 {
				i += j
			} else {
				i = len(sql)
			}
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			i = skipBlockComment(sql, i)
		case c == '$' && (i == 0 || !isIdentChar(sql[i-1])):
			// (after an identifier character, $ is part of the identifier)
			i = skipDollar(sql, i)
		case c == ';':
			toks = append(toks, sqlToken{kind: ';', offset: i})
			i++
		case c == '@' && i+1 < len(sql) && isIdentStart(sql[i+1]) && (i == 0 || !isIdentChar(sql[i-1])):
			j := i + 1
			for j < len(sql) && isIdentChar(sql[j]) {
				j++
			}
			toks = append(toks, sqlToken{kind: '@', offset: i, name: sql[i+1 : j]})
			i = j
		default:
			i++
		}
	}
	return toks
}

func skipQuoted(sql string, i int, q byte) int {
	for j := i + 1; j < len(sql); j++ {
		if sql[j] == q {
			if j+1 < len(sql) && sql[j+1] == q {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(sql)
}

// skipEscapeString skips an E'...' string, where a backslash escapes the
// next character.
func skipEscapeString(sql string, i int) int {
	for j := i + 1; j < len(sql); j++ {
		switch sql[j] {
		case '\\':
			j++
		case '\'':
			if j+1 < len(sql) && sql[j+1] == '\'' {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(sql)
}

// skipBlockComment skips a /* ... */ comment; they nest, as in the server.
func skipBlockComment(sql string, i int) int {
	depth := 0
	for j := i; j+1 < len(sql); j++ {
		switch {
		case sql[j] == '/' && sql[j+1] == '*':
			depth++
			j++
		case sql[j] == '*' && sql[j+1] == '/':
			depth--
			j++
			if depth == 0 {
				return j + 1
			}
		}
	}
	return len(sql)
}

// skipDollar skips a $tag$...$tag$ body; a positional parameter ($1) or a
// lone dollar is passed over.
func skipDollar(sql string, i int) int {
	j := i + 1
	for j < len(sql) && isIdentChar(sql[j]) && !(j == i+1 && sql[j] >= '0' && sql[j] <= '9') {
		j++
	}
	if j >= len(sql) || sql[j] != '$' {
		return i + 1
	}
	tag := sql[i : j+1]
	if end := strings.Index(sql[j+1:], tag); end >= 0 {
		return j + 1 + end + len(tag)
	}
	return len(sql)
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

// statementCount counts the non-empty statements in sql.
func statementCount(sql string) int { return len(statementPieces(sql)) }

// piece is one non-empty statement of a section: sql[start:end], from just
// after the previous top-level ';' (or the start) to its own ';' (or the end).
// Comments before it belong to it; empty statements are skipped.
type piece struct{ start, end int }

func statementPieces(sql string) []piece {
	var out []piece
	start := 0
	for _, t := range scanSQL(sql) {
		if t.kind != ';' {
			continue
		}
		if hasCode(sql[start:t.offset]) {
			out = append(out, piece{start, t.offset})
		}
		start = t.offset + 1
	}
	if hasCode(sql[start:]) {
		out = append(out, piece{start, len(sql)})
	}
	return out
}

// hasCode reports whether text holds anything but white space and comments.
func hasCode(text string) bool { return codeStart(text) >= 0 }

// codeStart is the offset of the first character of text that is neither
// white space nor part of a comment, or -1 when there is none.
func codeStart(text string) int {
	i := 0
	for i < len(text) {
		switch c := text[i]; {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v':
			i++
		case strings.HasPrefix(text[i:], "--"):
			j := strings.IndexByte(text[i:], '\n')
			if j < 0 {
				return -1
			}
			i += j
		case strings.HasPrefix(text[i:], "/*"):
			i = skipBlockComment(text, i)
		default:
			return i
		}
	}
	return -1
}

// positional rewrites named parameters to $1, $2... in order of first use
// and returns the names in that order, so statements run through pgx's
// statement cache with plain positional arguments.
func positional(sql string) (string, []string) {
	out, names, _ := rewrite(sql)
	return out, names
}

// paramEdit is one replacement positional made: the @name at byte offset at
// of the section's text (oldLen bytes) became $n (newLen bytes).
type paramEdit struct {
	at, oldLen, newLen int
}

// rewrite is positional's work, with the replacements it made, so that an
// offset in the rewritten text can be mapped back to the text as written.
// The trimming at the end moves nothing before it.
func rewrite(sql string) (string, []string, []paramEdit) {
	var b strings.Builder
	var names []string
	var edits []paramEdit
	index := map[string]int{}
	last := 0
	for _, t := range scanSQL(sql) {
		if t.kind != '@' {
			continue
		}
		n, ok := index[t.name]
		if !ok {
			names = append(names, t.name)
			n = len(names)
			index[t.name] = n
		}
		b.WriteString(sql[last:t.offset])
		param := "$" + strconv.Itoa(n)
		b.WriteString(param)
		last = t.offset + 1 + len(t.name)
		edits = append(edits, paramEdit{at: t.offset, oldLen: 1 + len(t.name), newLen: len(param)})
	}
	b.WriteString(sql[last:])
	out := strings.TrimRight(b.String(), " \t\r\n")
	out = strings.TrimRight(strings.TrimSuffix(out, ";"), " \t\r\n")
	return out, names, edits
}

// sourceOffset maps a byte offset in rewrite's output back to the text as
// written; an offset inside a $n points at its @name.
func sourceOffset(edits []paramEdit, off int) int {
	shift := 0 // how much longer the written text is up to here
	for _, e := range edits {
		start := e.at - shift
		if off < start {
			break
		}
		if off < start+e.newLen {
			return e.at
		}
		shift += e.oldLen - e.newLen
	}
	return off + shift
}

// errorOffset maps a server's error position (1-based, in characters of
// the statement positional made of sql) to a byte offset in sql. A position
// past the end (a syntax error at the end of input) is the end of the last
// statement, not of the trailing blank lines.
func errorOffset(sql string, position int) int {
	out, _, edits := rewrite(sql)
	off := len(out)
	chars := 0
	for i := range out { // i steps by character, as the server counts
		if chars == position-1 {
			off = i
			break
		}
		chars++
	}
	return min(sourceOffset(edits, off), len(sql))
}
