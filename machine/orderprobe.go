package machine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/sut"
)

// A fifo claim that took a row out of order passed over an earlier one.
// The model knows that it did, not why: a claim that never takes such a
// row (an expired lease it skips: a stranded row), or an order that puts
// the later row first (rows that tie on what the claim orders by, such as
// a created_at every event of one transaction shares, or an order that
// does not follow enqueue order). The verdict names the cause only where
// the server shows it: a probe runs the protocol's own claim again, in a
// transaction of the harness's that is rolled back, until it takes the
// passed-over row or nothing; and the claim's ORDER BY, read from the
// file, is asked whether two rows share a value.

// orderDetail is the failure message of a claim that slipped the fifo
// order, made from the model's (modelMsg): unchanged when the probe cannot
// run or the claim never takes the passed-over row.
func (r *run) orderDetail(op model.Op, got model.Outcome, modelMsg string) string {
	took, passed := model.OrderSlip(r.model(), got)
	if took == "" || !strings.Contains(modelMsg, ": claim took "+took+" out of order: "+passed) {
		return modelMsg // no slip, or the model named a rule before it
	}
	takes, err := r.probeTakes(passed)
	if err != nil || !takes {
		return modelMsg
	}
	if key, ok := r.h.Inst.Statements.ClaimOrder(); ok {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if ties, err := key.Ties(ctx, r.h.Inst.Conn); err == nil && ties {
			return fmt.Sprintf("%s: claim took %s out of order: %s ties with it on the claim's %s (%s was enqueued first and the claim takes it "+
				"once %s is taken; rows that share the value the claim orders by come in whichever order the plan finds them, "+
				"as every row one transaction enqueues shares now(): order by what follows enqueue order, such as the id)",
				r.shownStep(op, got), took, passed, key, passed, took)
		}
	}
	what := passed
	if strings.Contains(modelMsg, passed+", an expired lease,") {
		what += ", an expired lease," // the model's rule, its cause told apart below
	}
	return fmt.Sprintf("%s: claim took %s out of order: %s is claimable first (the claim takes %s once %s is taken: "+
		"it does not skip it, its order does not follow enqueue order)", r.shownStep(op, got), took, what, passed, took)
}

// probeTakes runs the protocol's claim in a transaction on the harness's
// connection, rolled back, as often as there are rows, and reports
// whether it took event. A statement that waits on a lock times out: the
// probe then knows nothing.
func (r *run) probeTakes(event string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tx, err := r.h.Inst.Conn.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = '1s'"); err != nil {
		return false, err
	}
	for range len(r.model().Rows) {
		rows, err := r.h.Inst.Driver().ClaimRows(ctx, tx, "probe")
		if err != nil {
			return false, err
		}
		if len(rows) == 0 {
			return false, nil
		}
		if slices.ContainsFunc(rows, func(c sut.ClaimResult) bool { return c.Event == event }) {
			return true, nil
		}
	}
	return false, nil
}
