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
func statementCount(sql string) int {
	n, start := 0, 0
	for _, t := range scanSQL(sql) {
		if t.kind != ';' {
			continue
		}
		if hasCode(sql[start:t.offset]) {
			n++
		}
		start = t.offset + 1
	}
	if hasCode(sql[start:]) {
		n++
	}
	return n
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
	var b strings.Builder
	var names []string
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
		b.WriteString("$" + strconv.Itoa(n))
		last = t.offset + 1 + len(t.name)
	}
	b.WriteString(sql[last:])
	out := strings.TrimRight(b.String(), " \t\r\n")
	out = strings.TrimRight(strings.TrimSuffix(out, ";"), " \t\r\n")
	return out, names
}
