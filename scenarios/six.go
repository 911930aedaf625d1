package scenarios

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/worker"
)

// KillAndRecover: a real child process claims in autocommit and reports the
// claim; only then is it SIGKILLed. The row must be INPROGRESS at
// generation 1, and once the lease fixture expires it, a new claim must
// return the same row at generation 2.
func KillAndRecover(ctx context.Context, e *Env) error {
	k, err := KillClaimer(ctx, e)
	if err != nil {
		return err
	}
	fifo := e.Inst.Proto.Order != model.Any
	if !k.First.Found || (fifo && k.First.Event != Events[0]) || (e.St.HasGen && k.First.Gen != 1) {
		return fmt.Errorf("first claim returned %+v, want %s at generation 1", k.First, Events[0])
	}
	if !worker.KilledBySIGKILL(k.Exit) {
		return fmt.Errorf("worker exit was %v, not SIGKILL", k.Exit)
	}
	if k.Persisted.Status != model.InProgress || (e.St.HasGen && k.Persisted.Gen != 1) {
		return fmt.Errorf("after the kill %s is %s at generation %d, want INPROGRESS at 1", k.First.Event, k.Persisted.Status, k.Persisted.Gen)
	}
	if !k.Reclaim.Found {
		return errors.New("stranded row: after the lease expired no claim returned the killed worker's row")
	}
	if k.Reclaim.Event != k.First.Event {
		return fmt.Errorf("stranded row: after the lease expired the claim skipped %s and returned %s", k.First.Event, k.Reclaim.Event)
	}
	if k.Reclaim.ID != k.First.ID || (e.St.HasGen && k.Reclaim.Gen != 2) {
		return fmt.Errorf("reclaim returned [%s, %q, %d], want [%s, %q, 2]", k.Reclaim.ID, k.Reclaim.Event, k.Reclaim.Gen, k.First.ID, k.First.Event)
	}
	return nil
}

// Killed is what the kill scenario observed, for tests that assert more.
type Killed struct {
	First     sut.ClaimResult
	Exit      *os.ProcessState
	Persisted sut.StateRow
	Reclaim   sut.ClaimResult
	Pid       int
}

// KillClaimer runs the kill scenario's steps and reports what it saw.
func KillClaimer(ctx context.Context, e *Env) (*Killed, error) {
	w, err := worker.Spawn(worker.Spec{Name: "w1", ConnString: e.Inst.ConnString, Statements: e.St})
	if err != nil {
		return nil, err
	}
	resp, err := w.Do(worker.Request{Op: "claim"})
	if err != nil || resp.Err != "" {
		w.Kill()
		return nil, fmt.Errorf("child claim: %v %s", err, resp.Err)
	}
	k := &Killed{First: sut.ClaimResult{Found: resp.Found, ID: resp.ID, Event: resp.Event, Gen: resp.Gen}, Pid: w.Pid()}
	backend := w.Backend
	st := w.Kill()
	k.Exit = st
	if err := worker.AwaitBackendGone(ctx, e.Inst.Conn, backend); err != nil {
		return nil, err
	}
	killed := Events[0]
	if k.First.Found {
		killed = k.First.Event
	}
	if k.Persisted, err = e.row(ctx, killed); err != nil {
		return nil, err
	}
	if err := e.expire(ctx, k.Persisted); err != nil {
		return nil, err
	}
	// With order=any the claim may take another due row first; it must
	// still come to the expired one.
	for i := 0; i < len(Events); i++ {
		if k.Reclaim, err = e.claim(ctx, e.Inst.Conn, "w2"); err != nil {
			return nil, err
		}
		if e.Inst.Proto.Order != model.Any || !k.Reclaim.Found || k.Reclaim.Event == killed {
			break
		}
	}
	return k, nil
}

// OpenClaimTransaction: a claim inside an open transaction holds its row;
// another connection's claim skips it (without waiting) and takes the next
// row; after the rollback the first row is claimable again.
func OpenClaimTransaction(ctx context.Context, e *Env) error {
	a, err := e.conn(ctx)
	if err != nil {
		return err
	}
	defer a.Close(context.Background())
	tx, err := a.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background())
	first, err := e.Inst.Driver().ClaimRows(ctx, tx, "w1")
	if err != nil {
		return fmt.Errorf("claim as w1: %w", err)
	}
	if !slices.ContainsFunc(first, func(c sut.ClaimResult) bool { return c.Event == Events[0] }) {
		return fmt.Errorf("claim in the open transaction returned %+v, want %s", first, Events[0])
	}
	second, err := e.Inst.Driver().ClaimRows(ctx, e.Inst.Conn, "w2")
	if err != nil {
		return fmt.Errorf("second connection (it must skip the locked row, not wait): %w", err)
	}
	// A batch claim may have taken every event: then the second finds
	// nothing, and must still take none of the locked rows.
	held := map[string]bool{}
	for _, c := range first {
		held[c.Event] = true
	}
	for _, c := range second {
		if held[c.Event] {
			return fmt.Errorf("second connection's claim returned %s, which the open transaction holds", c.Event)
		}
	}
	if len(second) == 0 && len(first) < len(Events) {
		return fmt.Errorf("second connection's claim returned nothing, want a different row than %s", first[0].Event)
	}
	if err := tx.Rollback(ctx); err != nil {
		return err
	}
	again, err := e.claim(ctx, e.Inst.Conn, "w3")
	if err != nil {
		return err
	}
	if !again.Found || again.Event != first[0].Event {
		return fmt.Errorf("after rollback the claim returned %+v, want %s available again", again, first[0].Event)
	}
	return nil
}

// StaleCompleteRejected and StaleRetryRejected: A claims; a newer live
// generation is constructed; A's late outcome must be rejected and leave
// the new owner's row untouched, and the new owner's outcome must apply.
func StaleCompleteRejected(ctx context.Context, e *Env) error {
	return staleOutcome(ctx, e, sut.Complete)
}

func StaleRetryRejected(ctx context.Context, e *Env) error {
	return staleOutcome(ctx, e, sut.Retry)
}

func staleOutcome(ctx context.Context, e *Env, section string) error {
	a, err := e.claim(ctx, e.Inst.Conn, "A")
	if err != nil {
		return err
	}
	if !a.Found {
		return errors.New("claim returned nothing on a fresh table")
	}
	b, err := e.newerGeneration(ctx, a)
	if err != nil {
		return err
	}
	applied, err := e.apply(ctx, section, a, generationOf(a, 1), "A")
	if err != nil {
		return err
	}
	if applied {
		return fmt.Errorf("stale %s applied: generation 1 overwrote the live generation 2", section)
	}
	r, err := e.row(ctx, a.Event)
	if err != nil {
		return err
	}
	if r.Status != model.InProgress || r.LeaseExpired || (e.St.HasGen && r.Gen != 2) {
		return fmt.Errorf("after the rejected stale %s the row is %s gen %d, want the new owner's INPROGRESS gen 2", section, r.Status, r.Gen)
	}
	applied, err = e.apply(ctx, section, b, generationOf(b, 2), "B")
	if err != nil {
		return err
	}
	if !applied {
		return fmt.Errorf("the current owner's %s was rejected", section)
	}
	return nil
}

// newerGeneration makes a's row owned by a newer live claim. For the
// article's table it writes the row directly, as the article does, so the
// check does not depend on the reclaim query; otherwise it expires the
// lease and claims again through the protocol.
func (e *Env) newerGeneration(ctx context.Context, a sut.ClaimResult) (sut.ClaimResult, error) {
	if e.Inst.Proto.Sections[sut.State].Default && e.St.HasGen {
		_, err := e.Inst.Conn.Exec(ctx, `UPDATE outbox_lab SET generation = generation + 1,
			lease_until = statement_timestamp() + interval '30 seconds' WHERE id = $1`, a.ID)
		if err != nil {
			return sut.ClaimResult{}, fmt.Errorf("construct generation 2: %w", err)
		}
		return sut.ClaimResult{Found: true, ID: a.ID, Event: a.Event, Gen: a.Gen + 1}, nil
	}
	r, err := e.row(ctx, a.Event)
	if err != nil {
		return sut.ClaimResult{}, err
	}
	if err := e.expire(ctx, r); err != nil {
		return sut.ClaimResult{}, err
	}
	b, err := e.claim(ctx, e.Inst.Conn, "B")
	if err != nil {
		return b, err
	}
	if !b.Found || b.Event != a.Event {
		return b, fmt.Errorf("could not construct a newer claim of %s: reclaim returned %+v", a.Event, b)
	}
	return b, nil
}

// RetryAfterSentRejected: a retry with the generation that completed the
// row must not move SENT back to READY.
func RetryAfterSentRejected(ctx context.Context, e *Env) error {
	c, err := e.claim(ctx, e.Inst.Conn, "A")
	if err != nil {
		return err
	}
	if !c.Found {
		return errors.New("claim returned nothing on a fresh table")
	}
	if ok, err := e.apply(ctx, sut.Complete, c, generationOf(c, 1), "A"); err != nil || !ok {
		return fmt.Errorf("the owner's complete did not apply (applied=%v, err=%v)", ok, err)
	}
	applied, err := e.apply(ctx, sut.Retry, c, generationOf(c, 1), "A")
	if err != nil {
		return err
	}
	r, err := e.row(ctx, c.Event)
	if err != nil {
		return err
	}
	if applied || r.Status != model.Sent {
		return fmt.Errorf("retry after complete applied=%v and left the row %s, want rejected and SENT", applied, r.Status)
	}
	return nil
}

// OwnerOutcomesApply: the current owner's retry applies and the event then
// waits for its backoff; once due it is claimed at the next generation,
// and that owner's complete applies.
func OwnerOutcomesApply(ctx context.Context, e *Env) error {
	c, err := e.claim(ctx, e.Inst.Conn, "A")
	if err != nil {
		return err
	}
	if !c.Found || c.Event != Events[0] {
		return fmt.Errorf("first claim returned %+v, want %s", c, Events[0])
	}
	if ok, err := e.apply(ctx, sut.Retry, c, generationOf(c, 1), "A"); err != nil || !ok {
		return fmt.Errorf("the owner's retry did not apply (applied=%v, err=%v)", ok, err)
	}
	next, err := e.claim(ctx, e.Inst.Conn, "B")
	if err != nil {
		return err
	}
	if next.Found && next.Event == c.Event {
		return fmt.Errorf("a retried event was claimed again before its backoff was due")
	}
	if err := e.fixture(ctx, sut.Due, c.ID); err != nil {
		return err
	}
	// B may hold event-002 now; the due event-001 comes first in order.
	again, err := e.claim(ctx, e.Inst.Conn, "C")
	if err != nil {
		return err
	}
	if !again.Found || again.Event != c.Event || (e.St.HasGen && again.Gen != c.Gen+1) {
		return fmt.Errorf("once due, the claim returned %+v, want %s at generation %d", again, c.Event, c.Gen+1)
	}
	if ok, err := e.apply(ctx, sut.Complete, again, generationOf(again, 2), "C"); err != nil || !ok {
		return fmt.Errorf("the owner's complete did not apply (applied=%v, err=%v)", ok, err)
	}
	r, err := e.row(ctx, c.Event)
	if err != nil {
		return err
	}
	if r.Status != model.Sent {
		return fmt.Errorf("after complete the row is %s, want SENT", r.Status)
	}
	return nil
}
