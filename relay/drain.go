package relay

import (
	"strings"

	"github.com/outboxlab/outboxlab/sut"
)

// Steps only the drain takes.
const (
	MakeDue   = "make_due" // a waiting row is due (fixture)
	RunRescue = "rescue"   // the protocol's rescue pass
)

// drain ends every check: everyone resumed, each worker finishes what it
// holds, every lease expires and every row is due (a rescue runs, when the
// protocol has one), then one worker relays until nothing is claimable,
// and the consumer reads to the end. What the consumer never applied by
// then is lost.
func (r *run) drain() error {
	r.log("     -- drain --")
	for _, w := range r.p.Workers {
		if r.paused[w] {
			if err := r.exec(Step{Kind: Resume, Worker: w}); err != nil {
				return err
			}
		}
	}
	for _, w := range r.p.Workers {
		for i := 0; i < 3 && r.held[w] != nil; i++ {
			if err := r.exec(Step{Kind: Next, Worker: w}); err != nil {
				return err
			}
		}
	}
	w := r.p.Workers[0]
	for range 4*len(r.p.Events) + 4 {
		if err := r.release(); err != nil {
			return err
		}
		if err := r.exec(Step{Kind: Next, Worker: w}); err != nil {
			return err
		}
		if r.held[w] == nil {
			break // claimed nothing
		}
		for i := 0; i < 3 && r.held[w] != nil; i++ {
			if err := r.exec(Step{Kind: Next, Worker: w}); err != nil {
				return err
			}
		}
	}
	for range 4 {
		before := len(r.lines)
		if err := r.exec(Step{Kind: Consume}); err != nil {
			return err
		}
		if r.readNothing(before) {
			break
		}
	}
	return nil
}

// readNothing reports whether the consume logged at line i read nothing.
func (r *run) readNothing(i int) bool {
	return i < len(r.lines) && strings.HasSuffix(r.lines[i], "read 0 record(s), 0 already applied")
}

// release expires every lease, runs the rescue and makes every waiting
// row due, as time passing would.
func (r *run) release() error {
	rows, err := r.state()
	if err != nil {
		return err
	}
	for _, row := range rows {
		if row.Status == "INPROGRESS" {
			if err := r.exec(Step{Kind: ExpireLease, Event: row.Event}); err != nil {
				return err
			}
		}
	}
	if r.h.Inst.Proto.Has(sut.Rescue) {
		if err := r.exec(Step{Kind: RunRescue}); err != nil {
			return err
		}
	}
	if rows, err = r.state(); err != nil {
		return err
	}
	for _, row := range rows {
		if row.Status == "READY" && !row.Due {
			if err := r.exec(Step{Kind: MakeDue, Event: row.Event}); err != nil {
				return err
			}
		}
	}
	return nil
}
