package sut

import (
	"context"
	"fmt"

	"github.com/outboxlab/outboxlab/driver"
)

// Driver runs a protocol's operations: the one path the worker processes,
// the state machine, the scenarios and the concurrent mode take, whether
// the protocol is a SQL file (*Statements) or a registered Go driver
// (goDriver). Section names are the file format's (Claim, Complete, ...).
type Driver interface {
	// Claim and ClaimRows run the claim; more rows than the batch, an
	// event twice or a row without an id is a *ProtocolError.
	Claim(ctx context.Context, q Querier, worker string) (ClaimResult, error)
	ClaimRows(ctx context.Context, q Querier, worker string) ([]ClaimResult, error)
	// Apply runs complete, retry or renew and says whether it applied.
	Apply(ctx context.Context, q Querier, section string, a Args) (bool, error)
	// Exec runs enqueue, expire, due, age or rescue for its effect.
	Exec(ctx context.Context, q Querier, section string, a Args) error
	Rescue(ctx context.Context, q Querier, worker string) error
	ReadState(ctx context.Context, q Querier) ([]StateRow, error)
	// StatementCount is how many statements section holds, where the
	// machine may split it (0: no such section). A Go driver's method is
	// one step: 1 for each it has.
	StatementCount(section string) int
}

var _ Driver = (*Statements)(nil)

// Driver is what runs s: s itself for a protocol file, or the Go driver
// registered as s.GoDriver. A worker process calls it once, after its
// spec arrives: the registration ran in its own init and TestMain.
func (s *Statements) Driver() (Driver, error) {
	if s.GoDriver == "" {
		return s, nil
	}
	p, err := driver.Lookup(s.GoDriver)
	if err != nil {
		return nil, err
	}
	return &goDriver{name: s.GoDriver, p: p, st: s}, nil
}

// Driver is what runs the instance's protocol (Statements.Driver, resolved
// when it was installed).
func (inst *Instance) Driver() Driver {
	if inst.driver == nil {
		return inst.Statements
	}
	return inst.driver
}

// has reports whether the Go driver has the named operation: the required
// ones always, the optional ones when it implements their interface.
func has(p driver.Protocol, section string) bool {
	switch section {
	case Renew:
		_, ok := p.(driver.Renewer)
		return ok
	case Rescue:
		_, ok := p.(driver.Rescuer)
		return ok
	case Age:
		_, ok := p.(driver.Ager)
		return ok
	case Schema, Claim, Complete, Retry, Enqueue, State, Expire, Due:
		return true
	}
	return false
}

// noSection is the error for an operation the protocol lacks, worded as a
// file's.
func noSection(section string) error { return fmt.Errorf("protocol has no %s section", section) }
