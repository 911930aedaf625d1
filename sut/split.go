package sut

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"

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
	if s.Worker != nil {
		// A worker's operation is one request: never split.
		switch section {
		case Claim, Complete, Retry:
			return 1
		case Renew, Rescue:
			if s.Worker.Has(section) {
				return 1
			}
		}
		return 0
	}
	st, ok := s.Stmts[section]
	if !ok {
		return 0
	}
	return len(st.Prelude) + 1
}

// ApplyFirst runs the first k statements of a claim, complete, retry, renew or rescue in
// tx, which stays open: 0 < k < StatementCount(section).
func (s *Statements) ApplyFirst(ctx context.Context, tx pgx.Tx, section string, a Args, k int) error {
	st, ok := s.Stmts[section]
	if !ok || k < 1 || k > len(st.Prelude) {
		return fmt.Errorf("%s: no split after statement %d of %d", section, k, s.StatementCount(section))
	}
	a = s.bind(a)
	for _, p := range st.Prelude[:k] {
		if _, err := tx.Exec(ctx, p.SQL, a.list(p.Params)...); err != nil {
			return err
		}
	}
	return nil
}

// ApplyRest runs the statements after the first k in tx and reads the
// last one's rows as Apply does (a rescue's are ignored). The caller commits tx.
func (s *Statements) ApplyRest(ctx context.Context, tx pgx.Tx, section string, a Args, k int) (bool, error) {
	rest, err := s.restAfter(section, k)
	if err != nil {
		return false, err
	}
	var applied bool
	err = steps(ctx, tx, rest, s.bind(a), func(rows pgx.Rows) error {
		if section == Rescue { // its rows are ignored, as Rescue's
			rows.Close()
			return rows.Err()
		}
		var err error
		applied, err = readOutcome(rows, section)
		return err
	})
	return applied, err
}

// ClaimRest runs a split claim's statements after the first k in tx and
// reads its rows as ClaimRows does. The caller commits tx.
func (s *Statements) ClaimRest(ctx context.Context, tx pgx.Tx, worker string, k int) ([]ClaimResult, error) {
	rest, err := s.restAfter(Claim, k)
	if err != nil {
		return nil, err
	}
	var out []ClaimResult
	err = steps(ctx, tx, rest, s.bind(Args{Worker: worker}), func(rows pgx.Rows) error {
		var err error
		out, err = s.readClaims(rows)
		return err
	})
	return out, err
}

// restAfter is section's statements after its first k, as one Stmt whose
// Prelude is the ones before its last.
func (s *Statements) restAfter(section string, k int) (Stmt, error) {
	st, ok := s.Stmts[section]
	if !ok || k < 1 || k > len(st.Prelude) {
		return Stmt{}, fmt.Errorf("%s: no split after statement %d of %d", section, k, s.StatementCount(section))
	}
	st.Prelude = st.Prelude[k:]
	return st, nil
}

// lockTimeout is how long a probe waits for a row lock before it says the
// row is held. A free lock is taken without waiting, however loaded the
// machine, and a held one is held by an open transaction of the machine's
// that stays open while the probe runs: a short bound decides the same,
// and each held row of a split's probe costs it (it was 20 ms).
const lockTimeout = "2ms"

// RowLock is what a probe learned of a row's lock.
type RowLock int

const (
	RowFree  RowLock = iota // no other transaction holds any lock on the row
	RowHeld                 // its lock blocks the fixtures' updates and the claims
	RowMaybe                // only a claim's FOR UPDATE would meet it, or the probe cannot tell
)

// ProbesRows reports whether ProbeRow can tell every row lock: the expire
// fixture is a plain update of one table's row by @id.
func (inst *Instance) ProbesRows() bool { return inst.rowProbe != "" }

// ProbeRow asks the server whether another transaction holds a lock on
// the row id (ProbesRows must hold), in transactions of its own with a
// short lock_timeout that it rolls back, so that nothing changes. A
// SELECT ... FOR UPDATE of the row meets every row lock, a foreign key
// check's KEY SHARE included: a row it takes at once is free. Only when it
// waits, or finds no row, does the fixture section (expire or due, whose
// UPDATE needs the row's lock when its WHERE matches the row) tell a lock
// that blocks the fixtures from one that only a claim's FOR UPDATE meets.
func (inst *Instance) ProbeRow(ctx context.Context, fixture, id string) (RowLock, error) {
	byID, err := inst.probe(ctx, []Stmt{{SQL: inst.rowProbe, Params: []string{"id"}}}, id)
	if err != nil || byID.known && !byID.held {
		return RowFree, err
	}
	st, ok := inst.Statements.Stmts[fixture]
	if !ok {
		return RowMaybe, fmt.Errorf("protocol has no %s section", fixture)
	}
	fix, err := inst.probe(ctx, append(slices.Clone(st.Prelude), st), id)
	switch {
	case err != nil:
		return RowMaybe, err
	case fix.held:
		return RowHeld, nil
	}
	return RowMaybe, nil
}

// probed is what one probe learned: held when a statement met a lock;
// known when the last statement matched a row (else it needed no lock and
// says nothing either way).
type probed struct{ held, known bool }

// probe runs stmts in a rolled-back transaction with a short lock timeout.
func (inst *Instance) probe(ctx context.Context, stmts []Stmt, id string) (probed, error) {
	tx, err := inst.Conn.Begin(ctx)
	if err != nil {
		return probed{}, err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '"+lockTimeout+"'"); err != nil {
		return probed{}, err
	}
	args := Args{ID: id, Worker: "harness"}
	var tag pgconn.CommandTag
	for _, st := range stmts {
		if tag, err = tx.Exec(ctx, st.SQL, args.list(st.Params)...); err != nil {
			break
		}
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "55P03" { // lock_not_available
		return probed{held: true, known: true}, nil
	}
	return probed{known: tag.RowsAffected() > 0}, err
}

// plainUpdateByID matches an expire fixture that updates one table's row
// by @id: UPDATE t SET ... WHERE ... col = $1 (the installed text, @id
// rewritten to a positional parameter).
var plainUpdateByID = regexp.MustCompile(`(?is)^\s*UPDATE\s+([a-z_][a-z0-9_]*)\s+SET\s.*\bWHERE\b.*?\b([a-z_][a-z0-9_]*)\s*=\s*\$(\d+)\b`)

// joinOrSubquery finds what makes a fixture's row possibly not the event's.
var joinOrSubquery = regexp.MustCompile(`(?i)\b(from|select)\b`)

// forUpdateProbe is SELECT ... FOR UPDATE of the expire fixture's row, or
// "" when the fixture is not a plain update of one table by @id (a join, a
// subquery, several statements: its row may not be the event's own).
func forUpdateProbe(expire Stmt) string {
	if len(expire.Prelude) > 0 || joinOrSubquery.MatchString(expire.SQL) {
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
