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
// both the same weather. Each side's figures pool its rounds.
func compareWithPgbench(ctx context.Context, inst *sut.Instance, d time.Duration, minClaims int) (Latency, Pgbench, error) {
	rounds := max(1, min(3, int(d/time.Second)))
	slice := d / time.Duration(rounds)
	var ours claimRun
	var theirs pgbenchRun
	for range rounds {
		o, err := timeClaims(ctx, inst, 1, slice, (minClaims+rounds-1)/rounds)
		if err != nil {
			return Latency{}, Pgbench{}, err
		}
		ours.add(o)
		t, err := runPgbench(ctx, inst, slice)
		if err != nil {
			return Latency{}, Pgbench{}, err
		}
		theirs.latencies, theirs.seconds = append(theirs.latencies, t.latencies...), theirs.seconds+t.seconds
	}
	l, err := ours.latency(1)
	pb := Pgbench{Transactions: len(theirs.latencies), P50US: us(percentile(theirs.latencies, 0.5)),
		TPS: math.Round(float64(len(theirs.latencies))/float64(theirs.seconds)*10) / 10, Rounds: rounds}
	pb.P50Ratio, pb.ThroughputRatio = round(l.P50US/pb.P50US), round(l.ClaimsPerS/pb.TPS)
	return l, pb, err
}
