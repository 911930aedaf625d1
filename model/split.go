package model

import (
	"fmt"
	"regexp"
	"strconv"
)

// A split step. A claim (split_claim.go), complete, retry, renew or rescue
// of several statements runs in one READ COMMITTED transaction, and every
// statement of it takes a new snapshot: other transactions commit between
// them. The state machine
// runs such a section in two parts, other actors' steps in between:
//
//	2. w1.Complete(e1, gen=1) [1/2] -> ok
//	3. Expire(e1) -> ok
//	4. w2.Claim() -> claimed e1 gen=2
//	5. w1.Complete(e1, gen=1) [2/2] -> applied   // model: rejected
//
// [k/n] says that k of the section's n statements have run. The first
// part changes no committed row; the rows it locked (the harness asks the
// server, see Hold) stay locked until the last part. The last part is the
// whole step, judged by the policy against the state when it commits: the
// moment its effect becomes visible to everyone else. A section that
// locks its row in its first part is judged as if it ran whole there (no
// one could change the row in between); one that reads without a lock and
// then writes by id is judged by what happened in between.
//
// A rescue's last part is judged the same way, as one rescue pass against
// the state when it commits: a rescue that read its rows in the first part
// and writes them by id without looking again may take a row that an
// owner completed, or a claim took, in between. (The pass may leave any
// expired row alone, so a rescue that fixed its rows by its read is not
// held to rows that expired after it: the machine runs no fixture while a
// rescue is split, so that none becomes a spent attempt the pass must bury.)

// Part marks one part of a split step: Upto of the section's Of
// statements have run once it ends.
type Part struct{ Upto, Of int }

// String is the part as a program line prints it: [1/2].
func (p Part) String() string { return fmt.Sprintf("[%d/%d]", p.Upto, p.Of) }

// First reports whether p is the part before the split.
func (p Part) First() bool { return p.Of > 0 && p.Upto < p.Of }

// Last reports whether p is the part that ends the section.
func (p Part) Last() bool { return p.Of > 0 && p.Upto == p.Of }

var partMark = regexp.MustCompile(` \[(\d+)/(\d+)\]$`)

// cutPart splits a trailing part mark off an op's text.
func cutPart(text string) (string, Part, error) {
	m := partMark.FindStringSubmatch(text)
	if m == nil {
		return text, Part{}, nil
	}
	upto, _ := strconv.Atoi(m[1])
	of, _ := strconv.Atoi(m[2])
	if of < 2 || upto < 1 || upto > of {
		return "", Part{}, fmt.Errorf("parse op %q: a part [K/N] needs 1 <= K <= N and N >= 2", text)
	}
	return text[:len(text)-len(m[0])], Part{Upto: upto, Of: of}, nil
}

// Splittable reports whether op's kind may be split: the claim
// (split_claim.go), the outcome steps and the rescue.
func (o Op) Splittable() bool {
	return o.Kind == ClaimOp || o.Kind == Complete || o.Kind == Retry || o.Kind == Renew || o.Kind == Rescue
}

// Rescuer is the rescue actor's name: the holder of the rows a split
// rescue's first part locks.
const Rescuer = "rescuer"

// Holder is who holds the locks of op's open split: its worker, or for a
// rescue the rescuer.
func (o Op) Holder() string {
	if o.Kind == Rescue {
		return Rescuer
	}
	return o.Worker
}

// Whole is op without its part mark.
func (o Op) Whole() Op {
	o.Part = Part{}
	return o
}

// Hold marks the rows of events as locked by holder's split section.
func (s State) Hold(holder string, events []string) State {
	next := s.clone()
	for _, e := range events {
		if i := next.row(e); i >= 0 && next.Rows[i].LockedBy == "" {
			next.Rows[i].LockedBy = holder
		}
	}
	return next
}

// release clears the locks of holder's split section. A worker with a
// split open has no open claim transaction (Precondition), so every lock
// it holds is the split's; the rescuer holds locks only in a split.
func (s State) release(holder string) State {
	next := s.clone()
	for i := range next.Rows {
		if next.Rows[i].LockedBy == holder {
			next.Rows[i].LockedBy = ""
		}
	}
	return next
}

// stepPart is Step for a part of a split step: the first changes nothing
// committed, the last is the whole step from the state after its locks
// are released.
func (s State) stepPart(op Op) []Transition {
	if op.Kind == ClaimOp {
		if op.Part.First() {
			return one(OK, s.readForClaim(op.Worker))
		}
		return s.finishClaim(op.Worker)
	}
	if op.Part.First() {
		return one(OK, s.clone())
	}
	if op.Kind == Rescue {
		free := s.release(op.Holder())
		if free.Precondition(op.Whole()) != nil {
			return nil
		}
		return free.rescuePass(true)
	}
	return s.release(op.Holder()).Step(op.Whole())
}
