package machine

import (
	"strings"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/sut"
)

// countCoverage records what a step exercised.
func (r *run) countCoverage(op model.Op, got model.Outcome) {
	s := r.model()
	cov := &r.h.Coverage
	if op.Part.First() {
		return // counted as split_step; the step is counted by its last part
	}
	if got.Kind == model.Waiting {
		cov.add(CovWaitingStep) // its outcome is counted when the wait ends
		return
	}
	switch op.Kind {
	case model.ClaimOp, model.Begin:
		if got.Kind == model.Claimed {
			cov.add(CovClaim)
			if len(got.More) > 0 {
				cov.add(CovBatchClaim)
			}
			for _, g := range got.Grants() {
				// A reclaim takes an expired lease, itself or after a
				// rescue returned it.
				if i := rowIndex(s, g.Event); i >= 0 && (s.Rows[i].Status == model.InProgress || r.rescued[g.Event]) {
					cov.add(CovReclaim)
					break
				}
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
		c := s.ClaimOf(op)
		stale := !s.IsCurrent(c)
		if s.Late(c) && got.Kind != model.Unknown {
			cov.add(CovLateOutcomeLenient)
		}
		if got.Kind == model.Applied && op.Kind == model.Renew {
			if i := rowIndex(s, op.Event); i >= 0 && s.Rows[i].Aged {
				cov.add(CovRenewAged)
			}
		}
		switch {
		case got.Kind == model.Applied:
			cov.add(strings.ToLower(string(op.Kind)))
		case got.Kind == model.Rejected && stale && op.Kind == model.Complete:
			cov.add(CovStaleCompleteRejected)
		case got.Kind == model.Rejected && stale && op.Kind == model.Retry:
			cov.add(CovStaleRetryRejected)
		}
	case model.Rescue:
		for _, row := range s.Rows {
			if row.Status == model.InProgress && !row.LeaseLive {
				cov.add(CovRescue) // a rescue with an expired claim to act on
				break
			}
		}
	case model.Expire:
		cov.add(CovExpire)
	case model.Age:
		cov.add(CovAge)
	case model.Pause:
		cov.add(CovPause)
	case model.Kill:
		cov.add(CovKill)
	}
}

// countRowCoverage records what the rows show op did: a row made DEAD, a
// row deleted on complete, an expired claim a rescue returned to READY
// (whose next claim is a reclaim).
func (r *run) countRowCoverage(op model.Op, before, after []sut.StateRow) {
	now := map[string]model.Status{}
	for _, row := range after {
		now[row.Event] = row.Status
	}
	for _, row := range before {
		status, ok := now[row.Event]
		switch {
		case !ok:
			r.h.Coverage.add(CovDeletedOnComplete)
		case status == model.Dead && row.Status != model.Dead:
			r.h.Coverage.add(CovDead)
		case op.Kind == model.Rescue && row.Status == model.InProgress && status == model.Ready:
			r.rescued[row.Event] = true
		case status == model.InProgress:
			delete(r.rescued, row.Event)
		}
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
