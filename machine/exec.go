package machine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/worker"
)

// The run* functions perform one step against the real system and return
// what was observed, in the model's terms.

func (r *run) runEnqueue(e string) model.Outcome {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st := r.h.Inst.Statements
	var err error
	r.h.timed(func() { err = st.Exec(ctx, r.h.Inst.Conn, sut.Enqueue, sut.Args{EventID: e, Worker: "harness"}) })
	if err != nil {
		r.fail("enqueue failed", fmt.Sprintf("Enqueue(%s) failed: %v", e, err))
	}
	return model.Outcome{Kind: model.OK}
}

func (r *run) runClaim(w string, kind model.Kind) model.Outcome {
	op := "claim"
	if kind == model.Begin {
		op = "begin"
	}
	resp, unknown := r.request(w, worker.Request{Op: op}, model.Op{Kind: kind, Worker: w})
	if unknown {
		return model.Outcome{Kind: model.Unknown}
	}
	if !resp.Found {
		return model.Outcome{Kind: model.Empty}
	}
	return model.Outcome{Kind: model.Claimed, Event: resp.Event, Gen: resp.Gen}
}

func (r *run) runEndTx(w string, kind model.Kind) model.Outcome {
	op := "commit"
	if kind == model.Rollback {
		op = "rollback"
	}
	if _, unknown := r.request(w, worker.Request{Op: op}, model.Op{Kind: kind, Worker: w}); unknown {
		return model.Outcome{Kind: model.Unknown}
	}
	return model.Outcome{Kind: model.OK}
}

func (r *run) runOutcome(op model.Op) model.Outcome {
	section := strings.ToLower(string(op.Kind))
	resp, unknown := r.request(op.Worker, worker.Request{Op: section, ID: r.ids[op.Event], Gen: op.Gen}, op)
	switch {
	case unknown:
		return model.Outcome{Kind: model.Unknown}
	case resp.Applied:
		return model.Outcome{Kind: model.Applied}
	}
	return model.Outcome{Kind: model.Rejected}
}

// request sends one request to a worker. A server error or a statement that
// hit its timeout is a violation (the protocol failed or blocked); a lost
// connection is an unknown outcome.
func (r *run) request(w string, req worker.Request, op model.Op) (worker.Response, bool) {
	p := r.h.procs[w]
	var resp worker.Response
	var err error
	r.h.timed(func() { resp, err = p.Do(req) })
	delete(r.h.stale, w) // it answered, or it dropped its connection
	if errors.Is(err, worker.ErrHung) && r.faultPending {
		// A cut connection the worker never noticed: as a kill, its
		// transaction rolls back, and what it sent is unknown.
		r.h.kill(w)
		r.dead[w] = true
		return resp, true
	}
	if errors.Is(err, worker.ErrHung) {
		r.h.kill(w)
		r.dead[w] = true
		r.fail(ruleName(op.Kind)+" blocked", fmt.Sprintf("%v did not return: it waited on a lock (claims must skip locked rows)", op))
	}
	if err != nil {
		r.t.Fatalf("harness: %v: %v", op, err)
	}
	switch {
	case resp.Err == "":
		return resp, false
	case resp.Timeout && !r.faultPending:
		r.fail(ruleName(op.Kind)+" blocked", fmt.Sprintf("%v blocked for %v: it waited on a lock (claims must skip locked rows)", op, r.h.Cfg.OpTimeout))
	case resp.ServerErr:
		r.fail(ruleName(op.Kind)+" failed with a server error", fmt.Sprintf("%v failed: %s", op, resp.Err))
	}
	return resp, true
}

func (r *run) runSignal(w string, kind model.Kind) model.Outcome {
	var err error
	switch kind {
	case model.Pause:
		err = r.h.procs[w].Pause()
	case model.Resume:
		err = r.h.procs[w].Resume()
	case model.Kill:
		if r.holdsNothing(w) {
			r.h.killIdle(w)
		} else {
			err = r.h.kill(w)
		}
		r.dead[w] = true
	case model.Respawn:
		err = r.h.spawn(w)
		r.dead[w] = err != nil
	}
	if err != nil {
		r.t.Fatalf("harness: %s %s: %v", kind, w, err)
	}
	return model.Outcome{Kind: model.OK}
}

func (r *run) runFixture(kind model.Kind, e string) model.Outcome {
	section := sut.Expire
	if kind == model.MakeDue {
		section = sut.Due
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var err error
	r.h.timed(func() {
		err = r.h.Inst.Statements.Exec(ctx, r.h.Inst.Conn, section, sut.Args{ID: r.ids[e], Worker: "harness"})
	})
	if err != nil {
		r.fail(section+" fixture failed", fmt.Sprintf("%s(%s) failed: %v", kind, e, err))
	}
	return model.Outcome{Kind: model.OK}
}

// countCoverage records what a step exercised.
func (r *run) countCoverage(op model.Op, got model.Outcome) {
	s := r.model()
	cov := &r.h.Coverage
	switch op.Kind {
	case model.ClaimOp, model.Begin:
		if got.Kind == model.Claimed {
			cov.add(CovClaim)
			if i := rowIndex(s, got.Event); i >= 0 && s.Rows[i].Status == model.InProgress {
				cov.add(CovReclaim)
			}
		}
		for _, row := range s.Rows {
			committedEligible := row.Status == model.Ready && row.Due || row.Status == model.InProgress && !row.LeaseLive
			if row.LockedBy != "" && row.LockedBy != op.Worker && committedEligible {
				cov.add(CovOpenTxSkip)
				break
			}
		}
	case model.Complete, model.Retry, model.Renew:
		stale := !s.IsCurrent(model.Claim{Worker: op.Worker, Event: op.Event, Gen: op.Gen})
		switch {
		case got.Kind == model.Applied:
			cov.add(strings.ToLower(string(op.Kind)))
		case got.Kind == model.Rejected && stale && op.Kind == model.Complete:
			cov.add(CovStaleCompleteRejected)
		case got.Kind == model.Rejected && stale && op.Kind == model.Retry:
			cov.add(CovStaleRetryRejected)
		}
	case model.Expire:
		cov.add(CovExpire)
	case model.Pause:
		cov.add(CovPause)
	case model.Kill:
		cov.add(CovKill)
	}
}

func rowIndex(s model.State, event string) int {
	for i, row := range s.Rows {
		if row.Event == event {
			return i
		}
	}
	return -1
}

// ruleName is a step kind as a failure message begins it ("claim blocked").
func ruleName(k model.Kind) string {
	if k == model.ClaimOp || k == model.Begin {
		return "claim"
	}
	return strings.ToLower(string(k))
}
