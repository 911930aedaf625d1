package bench

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/outboxlab/outboxlab/sut"
)

// verdict says, from the plan at the largest backlog, whether the claim's
// cost grows with the table and why, and what index would keep it flat.
func verdict(ctx context.Context, inst *sut.Instance, events int, p Plan) (text, suggestion string) {
	scan := p.Scan
	if !p.ReadsSent {
		return fmt.Sprintf("flat: at %d events the claim's %s threw away %d rows, no more than the %d that are not SENT: it does not read the sent history",
			events, scan.short(), p.Removed, p.NotSent), ""
	}
	suggestion = suggestIndex(ctx, inst, scan)
	why := " to find its first eligible one, more than the %d that are not SENT: it reads the SENT rows ahead of the eligible ones, and every sent event makes the next claim slower"
	if !strings.HasPrefix(scan.NodeType, "Index") {
		// A sequential or bitmap scan reads every candidate, then sorts.
		why = ", more than the %d that are not SENT: it reads the whole sent history on every claim and sorts what is left"
	}
	text = fmt.Sprintf("grows with the table: at %d events the claim's %s threw away %d rows"+why,
		events, scan.short(), p.Removed, p.NotSent)
	if suggestion != "" {
		text += "; an index that keeps it flat holds only the rows a claim may take, in the claim's order: " + suggestion
	} else {
		text += "; an index that keeps it flat holds only the rows a claim may take (a partial index whose WHERE leaves the SENT rows out), in the claim's order"
	}
	return text, suggestion
}

func (n ScanNode) short() string {
	if n.Index != "" {
		return n.NodeType + " using " + n.Index
	}
	return n.NodeType + " on " + n.Relation
}

// suggestIndex builds the partial index from the scan: its order (the
// index it walks, or the sort above it) and the part of its filter that
// does not depend on the clock (equality tests of a column with constants,
// which a partial index's predicate may hold). "" when the filter has none.
func suggestIndex(ctx context.Context, inst *sut.Instance, scan ScanNode) string {
	pred := immutablePredicate(scan.Filter)
	if pred == "" {
		return ""
	}
	key := strings.Join(stripAliases(scan.SortKey), ", ")
	if scan.Index != "" {
		var cols string
		err := inst.Conn.QueryRow(ctx, `SELECT string_agg(pg_get_indexdef(i.indexrelid, k, true), ', ' ORDER BY k)
			FROM pg_index AS i, generate_series(1, i.indnkeyatts) AS k
			WHERE i.indexrelid = to_regclass($1)`, inst.Statements.Schema+"."+scan.Index).Scan(&cols)
		if err == nil && cols != "" && key == "" {
			key = cols
		}
	}
	if key == "" {
		return ""
	}
	return fmt.Sprintf("CREATE INDEX ON %s (%s) WHERE %s", scan.Relation, key, pred)
}

var aliasPrefix = regexp.MustCompile(`^[a-z_][a-z0-9_]*\.`)

func stripAliases(keys []string) []string {
	var out []string
	for _, k := range keys {
		out = append(out, aliasPrefix.ReplaceAllString(k, ""))
	}
	return out
}

// equality is a filter term "(column = 'constant'::type)" as EXPLAIN
// prints it.
// The column may come qualified by its alias (a claim of several
// relations), which the index does not want.
var equality = regexp.MustCompile(`^\(?(?:[a-z_][a-z0-9_]*\.)?([a-z_][a-z0-9_]*) = ('(?:[^']|'')*')::[a-z_ ]+\)?$`)

// immutablePredicate is the strongest predicate made of column = constant
// tests that the filter implies: the conjuncts of an AND, or, for an OR,
// one column every branch tests for equality, as column IN (the constants).
func immutablePredicate(filter string) string {
	arms := splitTop(unwrap(filter), " OR ")
	if len(arms) == 1 {
		var eqs []string
		for _, term := range splitTop(unwrap(arms[0]), " AND ") {
			if m := equality.FindStringSubmatch(strings.TrimSpace(term)); m != nil {
				eqs = append(eqs, m[1]+" = "+m[2])
			}
		}
		return strings.Join(eqs, " AND ")
	}
	var column string
	var values []string
	for _, arm := range arms {
		found := false
		for _, term := range splitTop(unwrap(arm), " AND ") {
			m := equality.FindStringSubmatch(strings.TrimSpace(term))
			if m != nil && (column == "" || m[1] == column) {
				column, found = m[1], true
				values = append(values, m[2])
				break
			}
		}
		if !found {
			return ""
		}
	}
	return column + " IN (" + strings.Join(values, ", ") + ")"
}

// unwrap removes the parentheses around a whole expression.
func unwrap(s string) string {
	s = strings.TrimSpace(s)
	for len(s) > 1 && s[0] == '(' && closing(s, 0) == len(s)-1 {
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	return s
}

// closing is the index of the parenthesis that closes the one at open,
// skipping quoted text; -1 when there is none.
func closing(s string, open int) int {
	depth, quoted := 0, false
	for i := open; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// splitTop splits s on sep where sep is outside parentheses and quotes.
func splitTop(s, sep string) []string {
	var out []string
	depth, quoted, last := 0, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case depth == 0 && strings.HasPrefix(s[i:], sep):
			out = append(out, s[last:i])
			last = i + len(sep)
			i += len(sep) - 1
		}
	}
	return append(out, s[last:])
}
