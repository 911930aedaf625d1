package sut

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ClaimResult is what a claim returned.
type ClaimResult struct {
	Found bool
	ID    string
	Event string
	Gen   int64 // 0 when the protocol has no generation, or a token
	// Token is the generation under fence=token, as its text: an
	// integer's decimal digits, a uuid's canonical lowercase form, a
	// text as it is. "" under fence=counter.
	Token string
}

// Claim runs the claim section and returns its first row (Found false when
// nothing was claimable), with ClaimRows's errors.
func (s *Statements) Claim(ctx context.Context, q Querier, worker string) (ClaimResult, error) {
	rows, err := s.ClaimRows(ctx, q, worker)
	if err != nil || len(rows) == 0 {
		return ClaimResult{}, err
	}
	return rows[0], nil
}

// ClaimRows runs the claim section and returns the rows it claimed, each
// with Found set; none when nothing was claimable. More rows than the batch
// or an event twice is the protocol's failure, a *ProtocolError.
func (s *Statements) ClaimRows(ctx context.Context, q Querier, worker string) ([]ClaimResult, error) {
	var out []ClaimResult
	err := query(ctx, q, s.Stmts[Claim], Args{Worker: worker}, func(rows pgx.Rows) error {
		var err error
		out, err = s.readClaims(rows)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Statements) readClaims(rows pgx.Rows) ([]ClaimResult, error) {
	out := []ClaimResult{}
	for rows.Next() {
		// Nullable targets, so that a NULL is reported as what it is
		// rather than as a scan error.
		var id, event *string
		var gen *int64
		var token *string
		targets := make([]any, len(rows.FieldDescriptions()))
		for i, f := range rows.FieldDescriptions() {
			switch f.Name {
			case "id":
				targets[i] = &id
			case "event_id":
				targets[i] = &event
			case "generation":
				if s.Token {
					targets[i] = &token
				} else {
					targets[i] = &gen
				}
			default:
				targets[i] = new(any)
			}
		}
		if err := rows.Scan(targets...); err != nil {
			return nil, &ProtocolError{Rule: "claim returned a row the suite cannot read",
				Msg: fmt.Sprintf("claim returned a row the suite cannot read: %v", err)}
		}
		switch {
		case id == nil:
			return nil, broke("claim returned a NULL id")
		case event == nil:
			return nil, broke("claim returned a NULL event_id")
		case s.HasGen && gen == nil && token == nil:
			return nil, broke("claim returned a NULL generation")
		}
		r := ClaimResult{Found: true, ID: *id, Event: *event}
		if gen != nil {
			r.Gen = *gen
		}
		if token != nil {
			r.Token = *token
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// The count before the duplicates: a one-row claim that returned the
	// same row twice is reported as two rows, as it always was.
	if batch := max(s.Batch, 1); len(out) > batch {
		if batch == 1 {
			return nil, &ProtocolError{Rule: "claim returned more than one row", Msg: fmt.Sprintf("claim returned %d rows", len(out))}
		}
		return nil, &ProtocolError{Rule: "claim returned more than batch rows",
			Msg: fmt.Sprintf("claim returned %d rows, more than batch=%d", len(out), batch)}
	}
	if e := repeatedEvent(out); e != "" {
		return nil, &ProtocolError{Rule: "claim returned an event twice", Msg: fmt.Sprintf("claim returned event %s twice", e)}
	}
	return out, nil
}

// repeatedEvent is the first event a claim's rows hold twice, or "". At
// most 16 rows: a scan costs less than a map.
func repeatedEvent(rows []ClaimResult) string {
	for i, r := range rows {
		for _, earlier := range rows[:i] {
			if earlier.Event == r.Event {
				return r.Event
			}
		}
	}
	return ""
}
