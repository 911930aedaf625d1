package sut

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A section of several statements runs in one transaction, and under READ
// COMMITTED every statement of it takes a new snapshot: other transactions
// commit between them. The state machine splits such a section at a
// statement boundary to run other actors' steps there (machine/split.go).
// ApplyFirst runs the part before the split in a transaction the caller
// keeps open; ApplyRest runs the rest in it and reads the outcome.

// StatementCount is how many statements section holds (0: no such section).
func (s *Statements) StatementCount(section string) int {
	st, ok := s.Stmts[section]
	if !ok {
		return 0
	}
	return len(st.Prelude) + 1
}

// ApplyFirst runs the first k statements of a complete, retry or renew in
// tx, which stays open: 0 < k < StatementCount(section).
func (s *Statements) ApplyFirst(ctx context.Context, tx pgx.Tx, section string, a Args, k int) error {
	st, ok := s.Stmts[section]
	if !ok || k < 1 || k > len(st.Prelude) {
		return fmt.Errorf("%s: no split after statement %d of %d", section, k, s.StatementCount(section))
	}
	for _, p := range st.Prelude[:k] {
		if _, err := tx.Exec(ctx, p.SQL, a.list(p.Params)...); err != nil {
			return err
		}
	}
	return nil
}

// ApplyRest runs the statements after the first k in tx and reads the
// last one's rows as Apply does. The caller commits tx.
func (s *Statements) ApplyRest(ctx context.Context, tx pgx.Tx, section string, a Args, k int) (bool, error) {
	st, ok := s.Stmts[section]
	if !ok || k < 1 || k > len(st.Prelude) {
		return false, fmt.Errorf("%s: no split after statement %d of %d", section, k, s.StatementCount(section))
	}
	rest := st
	rest.Prelude = st.Prelude[k:]
	var applied bool
	err := steps(ctx, tx, rest, a, func(rows pgx.Rows) error {
		var err error
		applied, err = readOutcome(rows, section)
		return err
	})
	return applied, err
}

// lockTimeout is how long a probe waits for a row lock before it says the
// row is held: a lock free at once is taken at once.
const lockTimeout = "20ms"

// RowLock is what a probe learned of a row's lock.
type RowLock int

const (
	RowFree  RowLock = iota // no other transaction holds any lock on the row
	RowHeld                 // its lock blocks the fixtures' updates and the claims
	RowMaybe                // the probe cannot tell, or only a claim's FOR UPDATE would meet it
)

// ProbeRow asks the server whether another transaction holds a lock on
// the row id, in a transaction of its own with a short lock_timeout that
// it rolls back, so that nothing changes. It tries the fixture section
// (expire or due: its UPDATE needs the row's lock when its WHERE matches
// the row) and, when the expire fixture is a plain UPDATE of one table by
// @id, a SELECT ... FOR UPDATE of that row, which meets every row lock, a
// foreign key check's KEY SHARE included.
func (inst *Instance) ProbeRow(ctx context.Context, fixture, id string) (RowLock, error) {
	held, known, err := inst.probeFixture(ctx, fixture, id)
	if err != nil || held {
		return RowHeld, err
	}
	byID := forUpdateProbe(inst.Statements.Stmts[Expire])
	if byID == "" {
		return RowMaybe, nil
	}
	anyHeld, err := inst.probe(ctx, func(tx pgx.Tx) (bool, error) {
		tag, err := tx.Exec(ctx, byID, id)
		return tag.RowsAffected() > 0, err
	})
	switch {
	case err != nil:
		return RowMaybe, err
	case anyHeld.held || !anyHeld.known && !known:
		return RowMaybe, nil
	}
	return RowFree, nil
}

// ProbesRows reports whether ProbeRow can tell every row lock: the expire
// fixture is a plain update of one table's row by @id.
func (inst *Instance) ProbesRows() bool { return forUpdateProbe(inst.Statements.Stmts[Expire]) != "" }

type probed struct{ held, known bool }

// probe runs try in a rolled-back transaction with a short lock timeout;
// known is what try reports (whether its statement matched the row).
func (inst *Instance) probe(ctx context.Context, try func(pgx.Tx) (bool, error)) (probed, error) {
	tx, err := inst.Conn.Begin(ctx)
	if err != nil {
		return probed{}, err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '"+lockTimeout+"'"); err != nil {
		return probed{}, err
	}
	matched, err := try(tx)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "55P03" { // lock_not_available
		return probed{held: true, known: true}, nil
	}
	return probed{known: matched}, err
}

// probeFixture runs the fixture section in a probe: held when it met a
// lock; known false when its WHERE matched no row, so that it needed no
// lock and says nothing either way.
func (inst *Instance) probeFixture(ctx context.Context, fixture, id string) (held, known bool, err error) {
	st, ok := inst.Statements.Stmts[fixture]
	if !ok {
		return false, false, fmt.Errorf("protocol has no %s section", fixture)
	}
	p, err := inst.probe(ctx, func(tx pgx.Tx) (bool, error) {
		args := Args{ID: id, Worker: "harness"}.list
		for _, pre := range st.Prelude {
			if _, err := tx.Exec(ctx, pre.SQL, args(pre.Params)...); err != nil {
				return false, err
			}
		}
		tag, err := tx.Exec(ctx, st.SQL, args(st.Params)...)
		return tag.RowsAffected() > 0, err
	})
	return p.held, p.known, err
}

// plainUpdateByID matches an expire fixture that updates one table's row
// by @id: UPDATE t SET ... WHERE ... col = $1 (the installed text, @id
// rewritten to a positional parameter).
var plainUpdateByID = regexp.MustCompile(`(?is)^\s*UPDATE\s+([a-z_][a-z0-9_]*)\s+SET\s.*\bWHERE\b.*?\b([a-z_][a-z0-9_]*)\s*=\s*\$(\d+)\b`)

// forUpdateProbe is SELECT ... FOR UPDATE of the expire fixture's row, or
// "" when the fixture is not a plain update of one table by @id (a join, a
// subquery, several statements: its row may not be the event's own).
func forUpdateProbe(expire Stmt) string {
	lower := strings.ToLower(expire.SQL)
	if len(expire.Prelude) > 0 || strings.Contains(lower, "select") || regexp.MustCompile(`\bfrom\b`).MatchString(lower) {
		return ""
	}
	m := plainUpdateByID.FindStringSubmatch(expire.SQL)
	if m == nil {
		return ""
	}
	n, _ := strconv.Atoi(m[3])
	if n < 1 || n > len(expire.Params) || expire.Params[n-1] != "id" {
		return ""
	}
	return fmt.Sprintf("SELECT 1 FROM %s WHERE %s::text = $1::text FOR UPDATE", m[1], m[2])
}
