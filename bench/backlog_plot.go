package bench

import (
	"fmt"
	"math"

	"github.com/outboxlab/outboxlab/plot"
)

// BacklogPlot draws the backlog table's one-connection claim latency
// against the backlog's size: a solid p50 and a dashed p99 line per
// protocol, in the protocol's colour. Both axes are logarithmic, since
// the sizes grow by decades and a claim without a usable index slows by
// as much. A protocol with a size it has no one-connection figure for
// (a run cut short) is an error from plot.SVG, not a line that lies.
func BacklogPlot(b Backlog) ([]byte, error) {
	c := plot.Chart{
		Title:  "Claim latency against backlog (bench --backlog, 1 connection)",
		XLabel: "events in the table",
		YLabel: "claim transaction",
		XTick:  eventsTick,
		YTick:  microsTick,
	}
	for i, p := range b.Protocols {
		p50 := plot.Series{Name: p.Protocol + " p50", Color: i}
		p99 := plot.Series{Name: p.Protocol + " p99", Color: i, Dashed: true}
		for _, s := range p.Sizes {
			l := oneConnection(s)
			p50.Points = append(p50.Points, plot.Point{X: float64(s.Events), Y: l.P50US})
			p99.Points = append(p99.Points, plot.Point{X: float64(s.Events), Y: l.P99US})
		}
		c.Series = append(c.Series, p50, p99)
	}
	return plot.SVG(c)
}

func oneConnection(s SizeResult) Latency {
	for _, l := range s.Latency {
		if l.Connections == 1 {
			return l
		}
	}
	return Latency{}
}

// eventsTick prints a power of ten, 1000, as 1e3: the sizes are written so on the command
// line (--sizes 1e3,1e4).
func eventsTick(v float64) string {
	return fmt.Sprintf("1e%d", int(math.Round(math.Log10(v))))
}

// microsTick prints a latency in µs or ms.
func microsTick(v float64) string {
	if v >= 1000 {
		return plot.Plain(v/1000) + " ms"
	}
	return plot.Plain(v) + " µs"
}
