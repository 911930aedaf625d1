package bench

import (
	"context"
	"math"
	"time"

	"github.com/outboxlab/outboxlab/sut"
)

// compareWithPgbench measures the claim from one connection in rounds that
// alternate with pgbench's runs of the same claim, a second or more each:
// on a shared machine the load moves by the second, and alternating gives
// both the same weather. Each side's figures pool its rounds. Neither side's
// figure is corrected for the other's: no floor is subtracted.
func compareWithPgbench(ctx context.Context, inst *sut.Instance, d time.Duration, minClaims int) (Latency, Pgbench, error) {
	// A round a second, at most ten: a longer --for buys more rounds,
	// and more alternations are what narrow the weather's share.
	rounds := max(1, min(10, int(d/time.Second)))
	slice := d / time.Duration(rounds)
	// Untimed first: the first second of rolled-back claims on a freshly
	// vacuumed table is slower for any client (pgbench's too, measured
	// at 10^3 with the partial index: 250 µs, then 65 µs), and the round
	// that met it would carry it alone.
	if _, err := timeClaims(ctx, inst, 1, min(slice, time.Second), 0); err != nil {
		return Latency{}, Pgbench{}, err
	}
	var ours claimRun
	var theirs pgbenchRun
	for r := range rounds {
		// Every other round pgbench goes first: the server's state drifts
		// as rolled-back claims leave dead rows behind, and the same
		// order every round would give one client the later state.
		for _, pgbenchStep := range [][2]bool{{false, true}, {true, false}}[r%2] {
			if pgbenchStep {
				t, err := runPgbench(ctx, inst, slice)
				if err != nil {
					return Latency{}, Pgbench{}, err
				}
				theirs.latencies, theirs.seconds = append(theirs.latencies, t.latencies...), theirs.seconds+t.seconds
				continue
			}
			o, err := timeClaims(ctx, inst, 1, slice, (minClaims+rounds-1)/rounds)
			if err != nil {
				return Latency{}, Pgbench{}, err
			}
			ours.add(o)
		}
	}
	l, err := ours.latency(1)
	pb := Pgbench{Transactions: len(theirs.latencies), P50US: us(percentile(theirs.latencies, 0.5)),
		TPS: math.Round(float64(len(theirs.latencies))/float64(theirs.seconds)*10) / 10, Rounds: rounds}
	pb.P50Ratio, pb.ThroughputRatio = ratio(l.P50US, pb.P50US), ratio(l.ClaimsPerS, pb.TPS)
	return l, pb, err
}

// ratio is a over b, rounded; 0 where b is 0. pgbench on a loaded machine
// can finish no claim transaction in its seconds: it then has no p50 and
// no throughput to compare with, and a quotient of +Inf has no JSON form
// (the whole --json output failed on it).
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return round(a / b)
}
