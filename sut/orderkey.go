package sut

import (
	"context"
	"fmt"
	"regexp"
	"strings"
)

// OrderKey is what a claim picks its rows by, read from its SQL: the
// expressions of the first ORDER BY in the claim and the FROM clause of
// the SELECT that holds it. It lets a verdict say that two rows tie on
// the claim's order (rows enqueued in one transaction share now(), a
// coarse created_at shares a second) instead of guessing a cause.
type OrderKey struct {
	Exprs []string // each as written, without ASC, DESC or NULLS FIRST/LAST
	From  string   // the FROM clause's text, without the keyword
}

// String is the ORDER BY as a verdict quotes it.
func (k OrderKey) String() string { return "ORDER BY " + strings.Join(k.Exprs, ", ") }

// ClaimOrder reads the claim section's ORDER BY; ok is false when it has
// none, or none this reading can use (a parameter in it, a FROM it cannot
// find), and for a Go driver, whose claim is code.
func (s *Statements) ClaimOrder() (OrderKey, bool) {
	st, ok := s.Stmts[Claim]
	if !ok {
		return OrderKey{}, false
	}
	for _, stmt := range append(append([]Stmt(nil), st.Prelude...), st) {
		if k, ok := orderKeyOf(stmt.SQL); ok {
			return k, true
		}
	}
	return OrderKey{}, false
}

// Ties reports whether two rows of the claim's FROM share a value of its
// ORDER BY: then the claim's order between them is whatever the plan
// finds first, not the order they were enqueued in.
func (k OrderKey) Ties(ctx context.Context, q Querier) (bool, error) {
	sql := fmt.Sprintf("SELECT EXISTS (SELECT 1 FROM %s GROUP BY %s HAVING count(*) > 1)", k.From, strings.Join(k.Exprs, ", "))
	rows, err := q.Query(ctx, sql)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	var ties bool
	if rows.Next() {
		if err := rows.Scan(&ties); err != nil {
			return false, err
		}
	}
	return ties, rows.Err()
}

// masked is sql with the insides of strings, quoted identifiers, dollar
// quotes and comments blanked out, offsets kept: keywords and parentheses
// can then be found by plain search.
func masked(sql string) string {
	b := []byte(sql)
	blank := func(from, to int) {
		for i := from; i < to && i < len(b); i++ {
			if b[i] != '\n' {
				b[i] = ' '
			}
		}
	}
	i := 0
	for i < len(sql) {
		c := sql[i]
		var end int
		switch {
		case c == '\'' && i > 0 && (sql[i-1] == 'E' || sql[i-1] == 'e') && (i == 1 || !isIdentChar(sql[i-2])):
			end = skipEscapeString(sql, i)
		case c == '\'' || c == '"':
			end = skipQuoted(sql, i, c)
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			end = len(sql)
			if j := strings.IndexByte(sql[i:], '\n'); j >= 0 {
				end = i + j
			}
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			end = skipBlockComment(sql, i)
		case c == '$' && (i == 0 || !isIdentChar(sql[i-1])):
			end = skipDollar(sql, i)
			if end == i+1 {
				i++ // a positional parameter's $, kept
				continue
			}
		default:
			i++
			continue
		}
		if c == '"' {
			i = end // a quoted identifier stays readable
			continue
		}
		blank(i, end)
		i = end
	}
	return string(b)
}

var (
	orderByWord = regexp.MustCompile(`(?i)\border\s+by\b`)
	fromWord    = regexp.MustCompile(`(?i)\bfrom\b`)
	orderEnd    = regexp.MustCompile(`(?i)^\s*(limit|offset|for|fetch|window|union|except|intersect|returning)\b`)
	fromEnd     = regexp.MustCompile(`(?i)^\s*(where|group|having|order|limit|window|for)\b`)
	direction   = regexp.MustCompile(`(?i)\s+(asc|desc|nulls\s+first|nulls\s+last|using\s+\S+)(\s+(nulls\s+first|nulls\s+last))?\s*$`)
)

// orderKeyOf finds the first ORDER BY of one statement and the FROM of
// the SELECT it closes.
func orderKeyOf(sql string) (OrderKey, bool) {
	m := masked(sql)
	loc := orderByWord.FindStringIndex(m)
	if loc == nil {
		return OrderKey{}, false
	}
	depth := depths(m)
	at := depth[loc[0]]
	// The ORDER BY's list: to the end of its parenthesis, a clause that
	// follows it, or the statement's end.
	end := len(m)
	for i := loc[1]; i < len(m); i++ {
		if depth[i] < at || m[i] == ';' || depth[i] == at && orderEnd.MatchString(m[i:]) && (i == 0 || !isIdentChar(m[i-1])) {
			end = i
			break
		}
	}
	exprs := splitTop(sql[loc[1]:end], m[loc[1]:end], depth[loc[1]:end], at)
	// Its SELECT's FROM: the last FROM before it at the same depth.
	from := -1
	for _, f := range fromWord.FindAllStringIndex(m[:loc[0]], -1) {
		if depth[f[0]] == at {
			from = f[1]
		}
	}
	if from < 0 || len(exprs) == 0 {
		return OrderKey{}, false
	}
	fromTo := loc[0]
	for i := from; i < loc[0]; i++ {
		if depth[i] == at && fromEnd.MatchString(m[i:]) && !isIdentChar(m[i-1]) {
			fromTo = i
			break
		}
	}
	k := OrderKey{From: strings.TrimSpace(sql[from:fromTo])}
	for _, e := range exprs {
		e = strings.TrimSpace(direction.ReplaceAllString(strings.TrimSpace(e), ""))
		if e == "" || strings.Contains(e, "$") {
			return OrderKey{}, false // a parameter: no value to group by here
		}
		k.Exprs = append(k.Exprs, e)
	}
	if k.From == "" || strings.Contains(k.From, "$") {
		return OrderKey{}, false
	}
	return k, true
}

// depths is each offset's parenthesis depth in masked text.
func depths(m string) []int {
	out := make([]int, len(m)+1)
	d := 0
	for i := 0; i < len(m); i++ {
		if m[i] == ')' {
			d--
		}
		out[i] = d
		if m[i] == '(' {
			d++
		}
	}
	out[len(m)] = d
	return out
}

// splitTop splits text at the commas at depth at, found in its masked
// form m.
func splitTop(text, m string, depth []int, at int) []string {
	var out []string
	last := 0
	for i := 0; i < len(m); i++ {
		if m[i] == ',' && depth[i] == at {
			out = append(out, text[last:i])
			last = i + 1
		}
	}
	return append(out, text[last:])
}
