package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/concurrent"
	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/sut"
)

// worker is one raw worker's part of a history, drawn as
// a driving worker draws (worker/drive.go).
func (r *rawHistory) worker(conn *pgx.Conn, name string, rng *rand.Rand, mix concurrent.Mix) error {
	st := r.inst.Statements
	var claims []rawClaim
	for r.take() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var err error
		if h, ok := r.hint(); ok {
			if i := olderRawClaim(claims, h); i >= 0 && rng.IntN(5) > 0 {
				kinds := []model.Kind{model.Complete, model.Retry}
				if r.inst.Proto.Has(sut.Renew) {
					kinds = append(kinds, model.Renew)
				}
				err = r.outcome(ctx, conn, name, claims[i], kinds[rng.IntN(len(kinds))], mix)
				cancel()
				if err != nil {
					return err
				}
				continue
			}
		}
		switch n := rng.IntN(100); {
		case n < 30 || n >= 50 && len(claims) == 0:
			var rows []sut.ClaimResult
			rows, err = st.ClaimRows(ctx, conn, name)
			mix[claimKey(model.ClaimOp, rows)]++
			claims = append(claims, asClaims(rows)...)
		case n < 50:
			var got []rawClaim
			got, err = r.claimInTx(ctx, conn, name, rng, mix)
			claims = append(claims, got...)
		default:
			c := claims[len(claims)-1]
			if rng.IntN(2) == 0 {
				c = claims[rng.IntN(len(claims))]
			}
			kind := model.Complete
			switch k := rng.IntN(20); {
			case k < 5:
				kind = model.Retry
			case k < 9 && r.inst.Proto.Has(sut.Renew):
				kind = model.Renew
			}
			err = r.outcome(ctx, conn, name, c, kind, mix)
		}
		cancel()
		if err != nil {
			return fmt.Errorf("raw %s: %w", name, err)
		}
		if len(claims) > 8 {
			claims = claims[len(claims)-8:]
		}
	}
	return nil
}

// claimInTx claims in a transaction, posts a hint for each reclaimed row,
// then commits or, once in seven, rolls back: one operation of the budget
// for two statements, as the driver spends it.
func (r *rawHistory) claimInTx(ctx context.Context, conn *pgx.Conn, name string, rng *rand.Rand, mix concurrent.Mix) ([]rawClaim, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := r.inst.Statements.ClaimRows(ctx, tx, name)
	mix[claimKey(model.Begin, rows)]++
	if err != nil {
		tx.Rollback(ctx)
		return nil, err
	}
	got := asClaims(rows)
	var reclaims []rawClaim
	for _, c := range got {
		if c.gen > 1 {
			reclaims = append(reclaims, c)
		}
	}
	r.setHints(reclaims, nil)
	defer r.setHints(nil, got)
	if rng.IntN(7) == 0 {
		mix[concurrent.MixKey(model.Rollback, model.OK)]++
		return nil, tx.Rollback(ctx)
	}
	mix[concurrent.MixKey(model.Commit, model.OK)]++
	return got, tx.Commit(ctx)
}

func (r *rawHistory) outcome(ctx context.Context, conn *pgx.Conn, name string, c rawClaim, kind model.Kind, mix concurrent.Mix) error {
	section := map[model.Kind]string{model.Complete: sut.Complete, model.Retry: sut.Retry, model.Renew: sut.Renew}[kind]
	applied, err := r.inst.Statements.Apply(ctx, conn, section, sut.Args{ID: c.id, Gen: c.gen, Worker: name})
	out := model.Rejected
	if applied {
		out = model.Applied
	}
	mix[concurrent.MixKey(kind, out)]++
	return err
}

func olderRawClaim(claims []rawClaim, h rawClaim) int {
	for i := len(claims) - 1; i >= 0; i-- {
		if claims[i].event == h.event && claims[i].gen < h.gen {
			return i
		}
	}
	return -1
}

// fixtures is the raw fixture actor, drawn as concurrent's (fixtures.go):
// an expire or an age aimed at a claimed row and a due at a waiting one
// by the last read, enqueues up to MaxEvents, reads, and its pauses.
func (r *rawHistory) fixtures(conn *pgx.Conn, rng *rand.Rand, mix concurrent.Mix) error {
	st := r.inst.Statements
	for r.take() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var err error
		run := func(kind model.Kind, section string, args sut.Args) {
			err = st.Exec(ctx, conn, section, args)
			mix[string(kind)]++
		}
		switch n := rng.IntN(100); {
		case n < 22 || len(r.last) == 0:
			err = r.read(ctx, conn, mix)
		case n < 52:
			run(model.Expire, sut.Expire, sut.Args{ID: r.pick(rng, model.InProgress), Worker: "harness"})
		case n < 67:
			run(model.MakeDue, sut.Due, sut.Args{ID: r.pick(rng, model.Ready), Worker: "harness"})
		case n < 77 && r.inst.Proto.Has(sut.Age):
			run(model.Age, sut.Age, sut.Args{ID: r.pick(rng, model.InProgress), Worker: "harness", Seconds: 0.6 * r.inst.Proto.Lease.Seconds()})
		case n >= 87 && n < 92 && len(r.events) < r.cfg.MaxEvents:
			event := fmt.Sprintf("e%d", len(r.events)+1)
			run(model.Enqueue, sut.Enqueue, sut.Args{EventID: event, Worker: "harness"})
			r.events = append(r.events, event)
		default:
			err = r.read(ctx, conn, mix)
		}
		cancel()
		if err != nil {
			return fmt.Errorf("raw fixtures: %w", err)
		}
		time.Sleep(time.Duration(200+rng.IntN(800)) * time.Microsecond)
	}
	return nil
}

func (r *rawHistory) read(ctx context.Context, conn *pgx.Conn, mix concurrent.Mix) error {
	rows, err := r.inst.Statements.ReadState(ctx, conn)
	mix[concurrent.ReadKey]++
	if err == nil {
		r.last = rows
	}
	return err
}

// pick is the id of a row whose last read status was want, else of any
// row that read showed.
func (r *rawHistory) pick(rng *rand.Rand, want model.Status) string {
	var match []string
	for _, row := range r.last {
		if row.Status == want {
			match = append(match, row.ID)
		}
	}
	if len(match) == 0 || rng.IntN(5) == 0 {
		return r.last[rng.IntN(len(r.last))].ID
	}
	return match[rng.IntN(len(match))]
}
