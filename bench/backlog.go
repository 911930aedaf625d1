package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
)

// BacklogOptions is the budget of `outboxlab bench --backlog`.
type BacklogOptions struct {
	Sizes       []int         // backlogs, in events, smallest first
	For         time.Duration // each latency measurement, and pgbench's run
	MinClaims   int           // at least this many claims from one connection, however slow
	Connections []int         // latency from this many connections each
	// ChurnFor bounds the churn run on the largest backlog; 0 leaves it out.
	ChurnFor         time.Duration
	ChurnConnections int
	Pgbench          bool // compare with pgbench at every size
}

// DefaultBacklog is the run: 10^3 to 10^6 events.
func DefaultBacklog() BacklogOptions {
	return BacklogOptions{Sizes: []int{1_000, 10_000, 100_000, 1_000_000}, For: 3 * time.Second, MinClaims: 20,
		Connections: []int{1, 4}, ChurnFor: time.Minute, ChurnConnections: 4, Pgbench: true}
}

// Backlog is what `outboxlab bench --backlog --json` prints.
type Backlog struct {
	Protocols []ProtocolBacklog `json:"protocols"`
	Machine   Machine           `json:"machine"`
}

// ProtocolBacklog is one protocol's claim as its table grows.
type ProtocolBacklog struct {
	Protocol string       `json:"protocol"`
	Sizes    []SizeResult `json:"sizes"`
	// Growth is the one-connection p50 at the largest backlog over the
	// p50 at the smallest.
	Growth float64 `json:"growth"`
	// ReadsSent and Verdict are read from the plan at the largest backlog.
	ReadsSent      bool    `json:"reads_sent"`
	Verdict        string  `json:"verdict"`
	SuggestedIndex string  `json:"suggested_index,omitempty"`
	Churn          *Churn  `json:"churn,omitempty"`
	Seconds        float64 `json:"seconds"` // this protocol's wall time, loading included
}

// SizeResult is the claim at one backlog.
type SizeResult struct {
	Events  int       `json:"events"`
	Mix     Mix       `json:"mix"` // as the protocol's state query reads it
	Setup   Setup     `json:"setup_seconds"`
	Latency []Latency `json:"latency"` // one per connection count
	Plan    Plan      `json:"plan"`
	Pgbench *Pgbench  `json:"pgbench,omitempty"`
}

// Setup is how long making a backlog took, by step, in seconds.
type Setup struct {
	Enqueue float64 `json:"enqueue"` // the protocol's enqueue, 10,000 events a statement
	Mix     float64 `json:"mix"`     // the direct updates
	Vacuum  float64 `json:"vacuum"`  // VACUUM (ANALYZE) of every table
}

// P50US is the one-connection median claim.
func (s SizeResult) P50US() float64 {
	for _, l := range s.Latency {
		if l.Connections == 1 {
			return l.P50US
		}
	}
	return 0
}

// RunBacklog measures each protocol's claim at every size, each size in a
// fresh schema that is dropped before the next one is made (and on any
// error or cancellation: a killed run's schema goes at the next run's
// install, sut's sweep).
func RunBacklog(ctx context.Context, srv *pgserver.Server, protocols []*sut.Protocol, opt BacklogOptions, progress io.Writer) (Backlog, error) {
	out := Backlog{Machine: Host(srv)}
	for _, p := range protocols {
		if err := preflight(ctx, srv, p); err != nil {
			return out, err
		}
	}
	for _, p := range protocols {
		start := time.Now()
		r, err := backlogOf(ctx, srv, p, opt, progress)
		r.Seconds = math.Round(time.Since(start).Seconds()*10) / 10
		out.Protocols = append(out.Protocols, r)
		if err != nil {
			return out, fmt.Errorf("%s: %w", p.Name, err)
		}
	}
	return out, nil
}

func backlogOf(ctx context.Context, srv *pgserver.Server, p *sut.Protocol, opt BacklogOptions, progress io.Writer) (ProtocolBacklog, error) {
	r := ProtocolBacklog{Protocol: p.Name}
	for i, n := range opt.Sizes {
		s, c, err := sizeOf(ctx, srv, p, n, i == len(opt.Sizes)-1, opt, progress)
		if err != nil {
			return r, fmt.Errorf("%d events: %w", n, err)
		}
		r.Sizes = append(r.Sizes, s)
		r.Churn = c
	}
	first, last := r.Sizes[0], r.Sizes[len(r.Sizes)-1]
	if first.P50US() > 0 {
		r.Growth = round(last.P50US() / first.P50US())
	}
	r.ReadsSent, r.Verdict, r.SuggestedIndex = last.Plan.ReadsSent, last.Plan.Verdict, last.Plan.SuggestedIndex
	return r, nil
}

// preflight installs the protocol once, before anything is measured, to
// find a protocol the backlog cannot mix (a bad argument) at once.
func preflight(ctx context.Context, srv *pgserver.Server, proto *sut.Protocol) error {
	inst, err := install(ctx, srv, proto)
	if err != nil {
		return err
	}
	defer inst.Close()
	tables, err := schemaTables(ctx, inst)
	if err == nil {
		_, err = mixerFor(tables)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", proto.File, err)
	}
	return nil
}

// install puts a fresh copy of the protocol in a schema of its own: parsed
// again, since an install settles defaults in the Protocol it is given.
func install(ctx context.Context, srv *pgserver.Server, proto *sut.Protocol) (*sut.Instance, error) {
	p, err := sut.Parse(proto.Name, proto.File, proto.Source)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return sut.Install(ctx, srv.ConnString(), p)
}

// sizeOf installs the protocol afresh, loads n events, sets the mix and
// measures; on the largest size it runs the churn last, since the churn
// changes the table.
func sizeOf(ctx context.Context, srv *pgserver.Server, proto *sut.Protocol, n int, largest bool, opt BacklogOptions, progress io.Writer) (s SizeResult, c *Churn, err error) {
	s.Events = n
	say := func(what string) { fmt.Fprintf(progress, "backlog: %s: %d events: %s\n", proto.Name, n, what) }
	inst, err := install(ctx, srv, proto)
	if err != nil {
		return s, nil, err
	}
	defer inst.Close()
	tables, err := schemaTables(ctx, inst)
	if err != nil {
		return s, nil, err
	}
	mix, err := mixerFor(tables)
	if err != nil {
		return s, nil, err
	}
	say("load through enqueue, set the mix, vacuum and analyze")
	timed := func(into *float64, fn func() error) func() error {
		return func() error {
			start := time.Now()
			err := fn()
			*into = math.Round(time.Since(start).Seconds()*10) / 10
			return err
		}
	}
	if err := firstError(
		timed(&s.Setup.Enqueue, func() error { return load(ctx, inst, n) }),
		timed(&s.Setup.Mix, func() error { return mix.apply(ctx, inst.Conn, n) }),
		timed(&s.Setup.Vacuum, func() error { return vacuumAnalyze(ctx, inst, tables) })); err != nil {
		return s, nil, err
	}
	if s.Mix, err = readMix(ctx, inst); err == nil {
		err = verifyMix(s.Mix, expectedMix(n))
	}
	if err != nil {
		return s, nil, err
	}
	say("explain the claim")
	if s.Plan, err = explainClaim(ctx, inst, tables, s.Mix.NotSent()); err != nil {
		return s, nil, err
	}
	s.Plan.Verdict, s.Plan.SuggestedIndex = verdict(ctx, inst, n, s.Plan)
	for _, conns := range opt.Connections {
		var l Latency
		var err error
		if conns == 1 && opt.Pgbench {
			say(fmt.Sprintf("claims from 1 connection for %v, alternating with pgbench's", opt.For))
			var pb Pgbench
			l, pb, err = compareWithPgbench(ctx, inst, opt.For, opt.MinClaims)
			s.Pgbench = &pb
		} else {
			say(fmt.Sprintf("claims from %d connection(s) for %v", conns, opt.For))
			l, err = measureClaims(ctx, inst, conns, opt.For, map[bool]int{true: opt.MinClaims}[conns == 1])
		}
		if err != nil {
			return s, nil, err
		}
		s.Latency = append(s.Latency, l)
	}
	if largest && opt.ChurnFor > 0 {
		say(fmt.Sprintf("churn for %v from %d connections", opt.ChurnFor, opt.ChurnConnections))
		ch, err := churn(ctx, inst, n, opt.ChurnConnections, opt.ChurnFor, opt.For)
		if err != nil {
			return s, nil, fmt.Errorf("churn: %w", err)
		}
		c = &ch
	}
	return s, c, nil
}
