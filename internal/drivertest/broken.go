package drivertest

import (
	"context"

	"github.com/outboxlab/outboxlab/driver"
)

// Misbehaving is Leased with one promise broken, for the tests of what a
// bad driver gets: a panic in the method PanicIn, or Claims returned by
// every claim in place of the real one.
type Misbehaving struct {
	Leased
	PanicIn string
	Claims  []*driver.Claimed
	// ClaimErr is returned by every claim, when set.
	ClaimErr error
	// Batch is the batch it declares.
	Batch int
}

func (m Misbehaving) Directives() driver.Directives { return driver.Directives{Batch: m.Batch} }

func (m Misbehaving) panicIf(method string) {
	if m.PanicIn == method {
		panic("drivertest: " + method + " breaks on purpose")
	}
}

func (m Misbehaving) Claim(ctx context.Context, db driver.DB, worker string) ([]*driver.Claimed, error) {
	m.panicIf("Claim")
	if m.ClaimErr != nil {
		return nil, m.ClaimErr
	}
	if m.Claims != nil {
		return m.Claims, nil
	}
	return m.Leased.Claim(ctx, db, worker)
}

func (m Misbehaving) Complete(ctx context.Context, db driver.DB, c driver.Claimed) (bool, error) {
	m.panicIf("Complete")
	return m.Leased.Complete(ctx, db, c)
}

func (m Misbehaving) State(ctx context.Context, db driver.DB) ([]driver.Row, error) {
	m.panicIf("State")
	return m.Leased.State(ctx, db)
}

func (m Misbehaving) Enqueue(ctx context.Context, db driver.DB, eventID string) error {
	m.panicIf("Enqueue")
	return m.Leased.Enqueue(ctx, db, eventID)
}

// Broken drivers, registered for the worker tests: each in its own name.
const (
	PanicClaimName    = "drivertest-panic-claim"
	EmptyIDName       = "drivertest-empty-id"
	NilRowName        = "drivertest-nil-row"
	OverBatchName     = "drivertest-over-batch"
	PanicCompleteName = "drivertest-panic-complete"
)

func init() {
	driver.Register(PanicClaimName, Misbehaving{PanicIn: "Claim"})
	driver.Register(PanicCompleteName, Misbehaving{PanicIn: "Complete"})
	driver.Register(EmptyIDName, Misbehaving{Claims: []*driver.Claimed{{EventID: "e1", Generation: 1}}})
	driver.Register(NilRowName, Misbehaving{Claims: []*driver.Claimed{nil}})
	driver.Register(OverBatchName, Misbehaving{Claims: []*driver.Claimed{
		{ID: "1", EventID: "e1", Generation: 1}, {ID: "2", EventID: "e2", Generation: 1}}})
}
