package sut

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/outboxlab/outboxlab/model"
)

// Stmt is one section rewritten for execution: positional parameters in the
// order Params names them, so pgx's statement cache keeps it prepared.
type Stmt struct {
	SQL    string
	Params []string
}

// Statements are a protocol's statements as installed in one schema. They are
// plain data, so a worker process receives them over its pipe.
type Statements struct {
	Schema string
	HasGen bool
	Stmts  map[string]Stmt
}

// Querier runs a statement: a *pgx.Conn or a pgx.Tx.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Args are the values a section's named parameters take.
type Args struct {
	ID      string
	Gen     int64
	Worker  string
	EventID string
	// Seconds is how far the age fixture moves a lease deadline back. A
	// float64 goes to the server as double precision, the type of
	// make_interval's secs, so fractions of a second survive.
	Seconds float64
}

func (a Args) list(names []string) []any {
	out := make([]any, len(names))
	for i, n := range names {
		switch n {
		case "id":
			out[i] = a.ID
		case "generation":
			out[i] = a.Gen
		case "worker":
			out[i] = a.Worker
		case "event_id":
			out[i] = a.EventID
		case "seconds":
			out[i] = a.Seconds
		}
	}
	return out
}

// ClaimResult is what a claim returned.
type ClaimResult struct {
	Found bool
	ID    string
	Event string
	Gen   int64 // 0 when the protocol has no generation
}

// ProtocolError is a statement that ran but returned what its section may
// not: two rows from a one-row claim, a NULL id or generation. It is the
// protocol's own failure, never an ambiguous outcome: the connection is fine.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return e.Msg }

// IsProtocolError reports whether err is a *ProtocolError.
func IsProtocolError(err error) bool {
	var pe *ProtocolError
	return errors.As(err, &pe)
}

// Claim runs the claim section.
func (s *Statements) Claim(ctx context.Context, q Querier, worker string) (ClaimResult, error) {
	st := s.Stmts[Claim]
	rows, err := q.Query(ctx, st.SQL, Args{Worker: worker}.list(st.Params)...)
	if err != nil {
		return ClaimResult{}, err
	}
	defer rows.Close()
	var res ClaimResult
	n := 0
	for rows.Next() {
		n++
		// Nullable targets, so that a NULL is reported as what it is
		// rather than as a scan error.
		var id, event *string
		var gen *int64
		targets := make([]any, len(rows.FieldDescriptions()))
		for i, f := range rows.FieldDescriptions() {
			switch f.Name {
			case "id":
				targets[i] = &id
			case "event_id":
				targets[i] = &event
			case "generation":
				targets[i] = &gen
			default:
				targets[i] = new(any)
			}
		}
		if err := rows.Scan(targets...); err != nil {
			return ClaimResult{}, &ProtocolError{Msg: fmt.Sprintf("claim returned a row the suite cannot read: %v", err)}
		}
		switch {
		case id == nil:
			return ClaimResult{}, &ProtocolError{Msg: "claim returned a NULL id"}
		case event == nil:
			return ClaimResult{}, &ProtocolError{Msg: "claim returned a NULL event_id"}
		case s.HasGen && gen == nil:
			return ClaimResult{}, &ProtocolError{Msg: "claim returned a NULL generation"}
		}
		res.ID, res.Event = *id, *event
		if gen != nil {
			res.Gen = *gen
		}
	}
	if err := rows.Err(); err != nil {
		return ClaimResult{}, err
	}
	if n > 1 {
		return ClaimResult{}, &ProtocolError{Msg: fmt.Sprintf("claim returned %d rows", n)}
	}
	res.Found = n == 1
	return res, nil
}

// Apply runs complete, retry or renew and reports whether it applied: it
// returned at least one row, or, for a statement that always returns its
// row, exactly one row whose boolean column applied says so.
func (s *Statements) Apply(ctx context.Context, q Querier, section string, a Args) (bool, error) {
	st, ok := s.Stmts[section]
	if !ok {
		return false, fmt.Errorf("protocol has no %s section", section)
	}
	rows, err := q.Query(ctx, st.SQL, a.list(st.Params)...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	col := slices.IndexFunc(rows.FieldDescriptions(), func(f pgconn.FieldDescription) bool { return f.Name == "applied" })
	n := 0
	var applied *bool
	for rows.Next() {
		n++
		if col < 0 {
			continue
		}
		values, err := rows.Values()
		if err != nil {
			return false, &ProtocolError{Msg: fmt.Sprintf("%s returned a row the suite cannot read: %v", section, err)}
		}
		if b, ok := values[col].(bool); ok {
			applied = &b
		}
	}
	if err := rows.Err(); err != nil {
		return false, err
	}
	switch {
	case col < 0:
		return n > 0, nil
	case n == 0:
		return false, &ProtocolError{Msg: fmt.Sprintf("%s returned no row though it has an applied column (it must return exactly one)", section)}
	case n > 1:
		return false, &ProtocolError{Msg: fmt.Sprintf("%s returned %d rows", section, n)}
	case applied == nil:
		return false, &ProtocolError{Msg: fmt.Sprintf("%s returned a NULL applied", section)}
	}
	return *applied, nil
}

// Exec runs a section for its effect (enqueue, expire, due, age).
func (s *Statements) Exec(ctx context.Context, q Querier, section string, a Args) error {
	st, ok := s.Stmts[section]
	if !ok {
		// (an empty statement would run and do nothing)
		return fmt.Errorf("protocol has no %s section", section)
	}
	rows, err := q.Query(ctx, st.SQL, a.list(st.Params)...)
	if err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}

// StateRow is one row of the state query: the persisted view and the id the
// protocol uses for it.
type StateRow struct {
	ID string
	model.RowView
}

// ReadState runs the state query.
func (s *Statements) ReadState(ctx context.Context, q Querier) ([]StateRow, error) {
	rows, err := q.Query(ctx, s.Stmts[State].SQL)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []StateRow
	for rows.Next() {
		var r StateRow
		var status string
		var expired, due *bool
		targets := make([]any, len(rows.FieldDescriptions()))
		for i, f := range rows.FieldDescriptions() {
			switch f.Name {
			case "id":
				targets[i] = &r.ID
			case "event_id":
				targets[i] = &r.Event
			case "status":
				targets[i] = &status
			case "generation":
				targets[i] = &r.Gen
			case "lease_expired":
				targets[i] = &expired
			case "due":
				targets[i] = &due
			default:
				targets[i] = new(any)
			}
		}
		if err := rows.Scan(targets...); err != nil {
			return nil, &ProtocolError{Msg: fmt.Sprintf("state query returned a row the suite cannot read: %v", err)}
		}
		r.Status = model.Status(status)
		r.HasGen = s.HasGen
		r.LeaseHeld = expired != nil
		r.LeaseExpired = expired != nil && *expired
		r.Due = due != nil && *due
		out = append(out, r)
	}
	return out, rows.Err()
}

// IsServerError reports whether err came from the server (a statement that
// ran and failed); anything else, a broken connection or a timeout, leaves
// the statement's outcome unknown.
func IsServerError(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr)
}
