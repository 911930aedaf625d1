package sut

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// columnRule says which result columns a section must return and of what type.
type columnRule struct {
	name     string
	types    []uint32 // accepted type OIDs; nil: any
	typeName string
	optional bool
	// hint is added to the wrong-type error when the column has one of
	// hintTypes: what the file probably meant.
	hint      string
	hintTypes []uint32
}

var (
	textTypes = []uint32{pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID}
	intTypes  = []uint32{pgtype.Int8OID, pgtype.Int4OID, pgtype.Int2OID}
	boolTypes = []uint32{pgtype.BoolOID}
	// tokenTypes are what a fence=token generation may be: an integer, a
	// uuid or text, each passed back as its text.
	tokenTypes = slices.Concat(intTypes, []uint32{pgtype.UUIDOID}, textTypes)
)

// generationRule is the generation column's rule under the protocol's
// fence. A counter is an integer; a uuid or text one is probably a token
// whose file lacks the directive, and the error says so.
func (p *Protocol) generationRule(optional bool) columnRule {
	if p.Fence == FenceToken {
		return columnRule{name: "generation", types: tokenTypes, typeName: "bigint, uuid or text (fence=token)", optional: optional}
	}
	return columnRule{name: "generation", types: intTypes, typeName: "bigint", optional: optional,
		hint:      `under the default fence=counter; a uuid or text generation is an opaque token: add "-- outboxlab: fence=token"`,
		hintTypes: []uint32{pgtype.UUIDOID, pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID}}
}

func (p *Protocol) checkClaimColumns(desc *pgconn.StatementDescription) (hasGen bool, err error) {
	claim := p.Sections[Claim]
	rules := []columnRule{
		{name: "id"},
		{name: "event_id", types: textTypes, typeName: "text"},
		p.generationRule(true),
	}
	got, err := p.checkColumns(claim, desc, rules)
	if err == nil && p.Fence == FenceToken && !got["generation"] {
		// The model predicts no token: without one the suite would have
		// nothing to fence the outcomes with.
		err = &Error{p.File, claim.Line, `section "claim" returns no generation: with fence=token the claim must return its token as a column generation (bigint, uuid or text)`}
	}
	return got["generation"], err
}

func (p *Protocol) checkStateColumns(s *Section, desc *pgconn.StatementDescription, hasGen bool) error {
	rules := []columnRule{
		{name: "id"},
		{name: "event_id", types: textTypes, typeName: "text"},
		{name: "status", types: textTypes, typeName: "text"},
		p.generationRule(!hasGen),
		{name: "lease_expired", types: boolTypes, typeName: "boolean"},
		{name: "due", types: boolTypes, typeName: "boolean"},
	}
	got, err := p.checkColumns(s, desc, rules)
	if err == nil && got["generation"] && !hasGen {
		err = &Error{p.File, s.Line, `section "state" returns generation but claim does not: return it from both or from neither`}
	}
	return err
}

func (p *Protocol) checkColumns(s *Section, desc *pgconn.StatementDescription, rules []columnRule) (map[string]bool, error) {
	errAt := func(format string, args ...any) error {
		return &Error{File: p.File, Line: s.Line, Msg: fmt.Sprintf("section %q: ", s.Name) + fmt.Sprintf(format, args...)}
	}
	want := map[string]columnRule{}
	var expected []string
	for _, r := range rules {
		want[r.name] = r
		label := r.name
		if r.optional {
			label += " (optional)"
		}
		expected = append(expected, label)
	}
	got := map[string]bool{}
	var names []string
	for _, f := range desc.Fields {
		names = append(names, f.Name)
		r, ok := want[f.Name]
		if !ok {
			return nil, errAt("returns column %q; expected columns %s", f.Name, strings.Join(expected, ", "))
		}
		if got[f.Name] {
			return nil, errAt("returns column %q twice", f.Name)
		}
		got[f.Name] = true
		if r.types != nil && !containsOID(r.types, f.DataTypeOID) {
			if containsOID(r.hintTypes, f.DataTypeOID) {
				return nil, errAt("column %q must be %s %s", f.Name, r.typeName, r.hint)
			}
			return nil, errAt("column %q must be %s", f.Name, r.typeName)
		}
	}
	var missing []string
	for _, r := range rules {
		if !r.optional && !got[r.name] {
			missing = append(missing, r.name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(names)
		return nil, errAt("missing result column(s) %s (it returns: %s)", strings.Join(missing, ", "), strings.Join(names, ", "))
	}
	return got, nil
}

func containsOID(list []uint32, oid uint32) bool {
	for _, o := range list {
		if o == oid {
			return true
		}
	}
	return false
}

// checkOutcomeColumns holds complete, retry and renew to their two ways of
// reporting an outcome: a row when it applied and none when it was
// refused, or exactly one row with a boolean column applied.
func (p *Protocol) checkOutcomeColumns(s *Section, desc *pgconn.StatementDescription) error {
	if len(desc.Fields) == 0 {
		return &Error{p.File, s.Line, fmt.Sprintf("section %q returns no columns: it must return a row when it applies (add RETURNING)", s.Name)}
	}
	for _, f := range desc.Fields {
		if f.Name == "applied" && f.DataTypeOID != pgtype.BoolOID {
			return &Error{p.File, s.Line, fmt.Sprintf("section %q: column \"applied\" must be boolean", s.Name)}
		}
	}
	return nil
}
