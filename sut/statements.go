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
	// Prelude is the statements before the last of a section that holds
	// several, in order, each rewritten on its own; SQL and Params are the
	// last one's, whose rows are the section's result. Empty for a section
	// of one statement.
	Prelude []Stmt `json:",omitempty"`
}

// Statements are a protocol's statements as installed in one schema. They are
// plain data, so a worker process receives them over its pipe.
type Statements struct {
	Schema string
	// HasGen is set when the claim returns a generation, a counter's or
	// a token's.
	HasGen bool
	// Token is set under fence=token: a claim's generation is read as
	// text into ClaimResult.Token and the state query's into
	// StateRow.Token, and @generation is bound to Args.Token.
	Token bool `json:",omitempty"`
	// Batch is the most rows one claim may return (batch=); 0 means 1.
	Batch int
	Stmts map[string]Stmt
	// GoDriver is the name a Go driver is registered under (package
	// driver), for a protocol written in Go: Stmts is then empty, and the
	// worker runs the driver it finds by this name (Driver).
	GoDriver string `json:",omitempty"`
	// Worker is the worker executable that runs claim, complete, retry,
	// renew and rescue (docs/worker-protocol.md): Stmts then holds only
	// the harness's sections.
	Worker *WorkerSpec `json:",omitempty"`
}

// Querier runs a statement: a *pgx.Conn or a pgx.Tx.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Args are the values a section's named parameters take.
type Args struct {
	ID  string
	Gen int64
	// Token is @generation under fence=token: the text of the token the
	// claim returned, bound as a string (the server reads it as the
	// parameter's type, bigint, uuid or text, as it does @id), exactly as
	// given, "" included.
	Token   string
	Worker  string
	EventID string
	// Seconds is how far the age fixture moves a lease deadline back. A
	// float64 goes to the server as double precision, the type of
	// make_interval's secs, so fractions of a second survive.
	Seconds float64
	// asToken binds @generation to Token rather than Gen: set by the
	// Statements that run a section (bind), from Statements.Token.
	asToken bool
}

// bind is a with @generation bound as the protocol's fence says.
func (s *Statements) bind(a Args) Args {
	a.asToken = s.Token
	return a
}

func (a Args) list(names []string) []any {
	out := make([]any, len(names))
	for i, n := range names {
		switch n {
		case "id":
			out[i] = a.ID
		case "generation":
			if a.asToken {
				out[i] = a.Token
			} else {
				out[i] = a.Gen
			}
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

// ProtocolError is a statement that ran but returned what its section may
// not: two rows from a one-row claim, a NULL id or generation. It is the
// protocol's own failure, never an ambiguous outcome: the connection is fine.
//
// Rule is the rule it breaks, the same whatever the particulars in Msg (a
// row count, an event, a stack): "claim returned 3 rows" while shrinking
// drops an event is still the rule "claim returned more than one row". It
// crosses the worker protocol as data (the error reply's rule), so that
// the state machine and the concurrent mode name a failure alike.
type ProtocolError struct{ Rule, Msg string }

func (e *ProtocolError) Error() string { return e.Msg }

// broke is a ProtocolError whose text is its rule.
func broke(rule string) *ProtocolError { return &ProtocolError{Rule: rule, Msg: rule} }

// RuleOf is the rule of err's *ProtocolError, "" when it has none.
func RuleOf(err error) string {
	var pe *ProtocolError
	if !errors.As(err, &pe) {
		return ""
	}
	if pe.Rule == "" {
		return pe.Msg
	}
	return pe.Rule
}

// IsProtocolError reports whether err is a *ProtocolError.
func IsProtocolError(err error) bool {
	var pe *ProtocolError
	return errors.As(err, &pe)
}

// Apply runs complete, retry or renew and reports whether it applied: it
// returned at least one row, or, for a statement that always returns its
// row, exactly one row whose boolean column applied says so.
func (s *Statements) Apply(ctx context.Context, q Querier, section string, a Args) (bool, error) {
	st, ok := s.Stmts[section]
	if !ok {
		return false, fmt.Errorf("protocol has no %s section", section)
	}
	var applied bool
	err := query(ctx, q, st, s.bind(a), func(rows pgx.Rows) error {
		var err error
		applied, err = readOutcome(rows, section)
		return err
	})
	return applied, err
}

// readOutcome reads the rows of complete, retry or renew (the last
// statement's, for a section of several).
func readOutcome(rows pgx.Rows, section string) (bool, error) {
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
			return false, &ProtocolError{Rule: section + " returned a row the suite cannot read",
				Msg: fmt.Sprintf("%s returned a row the suite cannot read: %v", section, err)}
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
		return false, broke(section + " returned no row though it has an applied column (it must return exactly one)")
	case n > 1:
		return false, &ProtocolError{Rule: section + " returned more than one row", Msg: fmt.Sprintf("%s returned %d rows", section, n)}
	case applied == nil:
		return false, broke(section + " returned a NULL applied")
	}
	return *applied, nil
}

// Exec runs a section for its effect (enqueue, expire, due, age, rescue).
func (s *Statements) Exec(ctx context.Context, q Querier, section string, a Args) error {
	st, ok := s.Stmts[section]
	if !ok {
		// (an empty statement would run and do nothing)
		return fmt.Errorf("protocol has no %s section", section)
	}
	return query(ctx, q, st, s.bind(a), func(rows pgx.Rows) error {
		rows.Close()
		return rows.Err()
	})
}

// Rescue runs the rescue section, the maintenance pass, as worker (the
// rescuer); its rows are ignored.
func (s *Statements) Rescue(ctx context.Context, q Querier, worker string) error {
	return s.Exec(ctx, q, Rescue, Args{Worker: worker})
}

// StateRow is one row of the state query: the persisted view and the id the
// protocol uses for it.
type StateRow struct {
	ID string
	// Token is the row's generation under fence=token, as text; "" while
	// it is NULL (before the row's first claim). RowView's Gen is then 0
	// and HasGen false: the model predicts no token.
	Token string
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
		var token *string
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
				if s.Token {
					targets[i] = &token
				} else {
					targets[i] = &r.Gen
				}
			case "lease_expired":
				targets[i] = &expired
			case "due":
				targets[i] = &due
			default:
				targets[i] = new(any)
			}
		}
		if err := rows.Scan(targets...); err != nil {
			return nil, &ProtocolError{Rule: "state query returned a row the suite cannot read",
				Msg: fmt.Sprintf("state query returned a row the suite cannot read: %v", err)}
		}
		r.Status = model.Status(status)
		r.HasGen = s.HasGen && !s.Token
		if token != nil {
			r.Token = *token
		}
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
