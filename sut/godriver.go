package sut

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/driver"
	"github.com/outboxlab/outboxlab/model"
)

// goDriver runs a registered Go protocol as a Driver. It holds the driver
// to what the suite holds a file to: a claim's rows are checked as a
// claim section's are, and a method that panics is the protocol's own
// failure, a *ProtocolError with the stack, not a crash of the harness or
// of a worker (whose parent would only see its pipe close).
type goDriver struct {
	name string
	p    driver.Protocol
	st   *Statements // the traits: Schema, HasGen, Token, Batch
}

// guard turns a panic of method into *err.
func (g *goDriver) guard(method string, err *error) {
	if v := recover(); v != nil {
		*err = &ProtocolError{Rule: fmt.Sprintf("Go driver %s: %s panicked", g.name, method),
			Msg: fmt.Sprintf("Go driver %s: %s panicked: %v\n%s", g.name, method, v, debug.Stack())}
	}
}

// db is q as the API's DB: the worker's *pgx.Conn or pgx.Tx, each of which
// has Exec and QueryRow as well as Query.
func db(q Querier) (driver.DB, error) {
	d, ok := q.(driver.DB)
	if !ok {
		return nil, fmt.Errorf("a Go driver needs a *pgx.Conn or a pgx.Tx, not a %T", q)
	}
	return d, nil
}

func (g *goDriver) StatementCount(section string) int {
	if has(g.p, section) {
		return 1
	}
	return 0
}

func (g *goDriver) Claim(ctx context.Context, q Querier, worker string) (ClaimResult, error) {
	rows, err := g.ClaimRows(ctx, q, worker)
	if err != nil || len(rows) == 0 {
		return ClaimResult{}, err
	}
	return rows[0], nil
}

func (g *goDriver) ClaimRows(ctx context.Context, q Querier, worker string) (out []ClaimResult, err error) {
	d, err := db(q)
	if err != nil {
		return nil, err
	}
	defer g.guard("Claim", &err)
	claimed, err := g.p.Claim(ctx, d, worker)
	if errors.Is(err, pgx.ErrNoRows) {
		// Neither the server's refusal nor a lost connection, it would
		// pass for an outcome nobody knows: the API says nil instead.
		return nil, broke(fmt.Sprintf("Go driver %s: Claim returned pgx.ErrNoRows; return no rows when nothing is claimable", g.name))
	}
	if err != nil {
		return nil, err
	}
	return g.checkClaims(claimed)
}

// checkClaims is readClaims's checks, for rows that come as values: a
// missing id or event is "" here, where a file's is NULL.
func (g *goDriver) checkClaims(claimed []*driver.Claimed) ([]ClaimResult, error) {
	if batch := max(g.st.Batch, 1); len(claimed) > batch {
		return nil, &ProtocolError{Rule: fmt.Sprintf("Go driver %s: Claim returned more than batch rows", g.name),
			Msg: fmt.Sprintf("Go driver %s: Claim returned %d rows, more than batch=%d", g.name, len(claimed), batch)}
	}
	out := make([]ClaimResult, 0, len(claimed))
	for i, c := range claimed {
		switch {
		case c == nil:
			return nil, &ProtocolError{Rule: fmt.Sprintf("Go driver %s: Claim returned a nil row", g.name),
				Msg: fmt.Sprintf("Go driver %s: Claim returned a nil row (element %d)", g.name, i)}
		case c.ID == "":
			return nil, broke(fmt.Sprintf("Go driver %s: Claim returned an empty ID", g.name))
		case c.EventID == "":
			return nil, broke(fmt.Sprintf("Go driver %s: Claim returned an empty EventID", g.name))
		case g.st.Token && c.Token == "":
			return nil, broke(fmt.Sprintf("Go driver %s: Claim returned an empty Token under FenceToken", g.name))
		}
		r := ClaimResult{Found: true, ID: c.ID, Event: c.EventID, Token: c.Token}
		if g.st.HasGen && !g.st.Token {
			r.Gen = c.Generation
		}
		out = append(out, r)
	}
	if e := repeatedEvent(out); e != "" {
		return nil, &ProtocolError{Rule: fmt.Sprintf("Go driver %s: Claim returned an event twice", g.name),
			Msg: fmt.Sprintf("Go driver %s: Claim returned event %s twice", g.name, e)}
	}
	return out, nil
}

func (g *goDriver) Apply(ctx context.Context, q Querier, section string, a Args) (applied bool, err error) {
	d, err := db(q)
	if err != nil {
		return false, err
	}
	c := driver.Claimed{ID: a.ID, EventID: a.EventID, Generation: a.Gen, Token: a.Token, Worker: a.Worker}
	switch section {
	case Complete:
		defer g.guard("Complete", &err)
		return g.p.Complete(ctx, d, c)
	case Retry:
		defer g.guard("Retry", &err)
		return g.p.Retry(ctx, d, c)
	case Renew:
		if r, ok := g.p.(driver.Renewer); ok {
			defer g.guard("Renew", &err)
			return r.Renew(ctx, d, c)
		}
	}
	return false, noSection(section)
}

func (g *goDriver) Exec(ctx context.Context, q Querier, section string, a Args) (err error) {
	d, err := db(q)
	if err != nil {
		return err
	}
	switch section {
	case Enqueue:
		defer g.guard("Enqueue", &err)
		return g.p.Enqueue(ctx, d, a.EventID)
	case Expire:
		defer g.guard("Expire", &err)
		return g.p.Expire(ctx, d, a.ID)
	case Due:
		defer g.guard("Due", &err)
		return g.p.Due(ctx, d, a.ID)
	case Age:
		if ag, ok := g.p.(driver.Ager); ok {
			defer g.guard("Age", &err)
			return ag.Age(ctx, d, a.ID, a.Seconds)
		}
	case Rescue:
		if r, ok := g.p.(driver.Rescuer); ok {
			defer g.guard("Rescue", &err)
			return r.Rescue(ctx, d, a.Worker)
		}
	}
	return noSection(section)
}

func (g *goDriver) Rescue(ctx context.Context, q Querier, worker string) error {
	return g.Exec(ctx, q, Rescue, Args{Worker: worker})
}

func (g *goDriver) ReadState(ctx context.Context, q Querier) (out []StateRow, err error) {
	d, err := db(q)
	if err != nil {
		return nil, err
	}
	defer g.guard("State", &err)
	rows, err := g.p.State(ctx, d)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		s := StateRow{ID: r.ID, RowView: model.RowView{Event: r.EventID, Status: model.Status(r.Status), Due: r.Due}}
		if g.st.Token {
			s.Token = r.Token
		} else if g.st.HasGen {
			s.Gen, s.HasGen = r.Generation, true
		}
		s.LeaseHeld = r.LeaseExpired != nil
		s.LeaseExpired = r.LeaseExpired != nil && *r.LeaseExpired
		out = append(out, s)
	}
	return out, nil
}
