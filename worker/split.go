package worker

import (
	"context"

	"github.com/outboxlab/outboxlab/sut"
)

// A split section: the state machine runs a claim, complete, retry or renew of
// several statements in two requests, so that other actors' steps run at
// the statement boundary between them (machine/split.go). The first
// request opens the worker's transaction and runs the statements before
// the split; the second runs the rest in it and commits. Between them the
// worker holds an open transaction, as after a Begin claim, so a reset, a
// kill or a lost connection rolls it back.

// The split ops.
const (
	OpSplit  = "split"  // the statements before the split, in a new open transaction
	OpFinish = "finish" // the statements after it, then commit
)

// SplitRequest is the section a split runs and where it is split: after
// its first Upto statements.
type SplitRequest struct {
	Section string `json:"section"`
	Upto    int    `json:"upto"`
}

func (a *agent) splitFirst(ctx context.Context, req Request) Response {
	if a.tx != nil {
		return Response{Err: "split: a transaction is already open"}
	}
	if req.Split == nil {
		return Response{Err: "split: no section named"}
	}
	tx, err := a.conn.Begin(ctx)
	if err != nil {
		return failure(err, ctx.Err() != nil)
	}
	args := sut.Args{ID: req.ID, Gen: req.Gen, Token: req.Token, Worker: a.spec.Name}
	if err := a.spec.Statements.ApplyFirst(ctx, tx, req.Split.Section, args, req.Split.Upto); err != nil {
		tx.Rollback(ctx)
		return failure(err, ctx.Err() != nil)
	}
	a.tx = tx
	return Response{}
}

func (a *agent) splitRest(ctx context.Context, req Request) Response {
	if a.tx == nil || req.Split == nil {
		return Response{Err: "finish: no split section open"}
	}
	tx := a.tx
	a.tx = nil
	var resp Response
	var err error
	if req.Split.Section == sut.Claim {
		var rows []sut.ClaimResult
		rows, err = a.spec.Statements.ClaimRest(ctx, tx, a.spec.Name, req.Split.Upto)
		resp = claimed(rows)
	} else {
		args := sut.Args{ID: req.ID, Gen: req.Gen, Token: req.Token, Worker: a.spec.Name}
		resp.Applied, err = a.spec.Statements.ApplyRest(ctx, tx, req.Split.Section, args, req.Split.Upto)
	}
	if err != nil {
		tx.Rollback(ctx)
		return failure(err, ctx.Err() != nil)
	}
	if err := tx.Commit(ctx); err != nil {
		return failure(err, ctx.Err() != nil)
	}
	return resp
}
