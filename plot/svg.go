// Package plot draws a line chart on two logarithmic axes as one
// self-contained SVG file: no script, no font or style from elsewhere, so
// that it shows the same from disk, in a browser or on a Markdown page.
// It is small on purpose: the figures it draws (latency against backlog
// size) span decades on both axes, and nothing else is asked of it.
package plot

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"math"
	"strconv"
)

// Point is one measurement; both coordinates must be positive.
type Point struct{ X, Y float64 }

// Series is one line of the chart, drawn in its legend under Name.
type Series struct {
	Name   string
	Points []Point
	Dashed bool
	// Color is the index of the series' colour in the palette: a p50 and
	// a p99 of the same protocol share one, and differ by Dashed.
	Color int
}

// Chart is a line chart with logarithmic axes.
type Chart struct {
	Title, XLabel, YLabel string
	// XTick and YTick print a tick's value (a power of ten).
	XTick, YTick func(float64) string
	Series       []Series
}

// palette is distinguishable in colour and in grey.
var palette = []string{"#1f5fa8", "#c0392b", "#2e8b57", "#8e44ad", "#d68910", "#17202a"}

// Geometry of the drawing, in SVG user units.
const (
	width, height              = 760, 440
	left, right, top, bottom   = 80, 220, 40, 60
	plotWidth, plotHeight      = width - left - right, height - top - bottom
	legendX, legendY, legendDY = width - right + 20, top + 10, 20
)

// SVG draws the chart. A chart with no series, an empty series or a value
// that is not positive and finite (a log axis has no place for it) is an
// error, not a picture that misleads.
func SVG(c Chart) ([]byte, error) {
	if len(c.Series) == 0 {
		return nil, errors.New("plot: no series")
	}
	xs, ys, err := ranges(c.Series)
	if err != nil {
		return nil, err
	}
	if c.XTick == nil {
		c.XTick = Plain
	}
	if c.YTick == nil {
		c.YTick = Plain
	}
	x := func(v float64) float64 { return left + plotWidth*(math.Log10(v)-xs[0])/(xs[1]-xs[0]) }
	y := func(v float64) float64 { return top + plotHeight*(1-(math.Log10(v)-ys[0])/(ys[1]-ys[0])) }

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="14" font-weight="bold">%s</text>`+"\n", left, top-16, html.EscapeString(c.Title))
	// The grid: one line and one label per decade on each axis.
	for d := xs[0]; d <= xs[1]; d++ {
		px := x(math.Pow(10, d))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#dddddd"/>`+"\n", px, top, px, top+plotHeight)
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", px, top+plotHeight+18, html.EscapeString(c.XTick(math.Pow(10, d))))
	}
	for d := ys[0]; d <= ys[1]; d++ {
		py := y(math.Pow(10, d))
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#dddddd"/>`+"\n", left, py, left+plotWidth, py)
		fmt.Fprintf(&b, `<text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, py+4, html.EscapeString(c.YTick(math.Pow(10, d))))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#555555"/>`+"\n", left, top, plotWidth, plotHeight)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", left+plotWidth/2, height-16, html.EscapeString(c.XLabel))
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" transform="rotate(-90 %d %d)">%s</text>`+"\n", 18, top+plotHeight/2, 18, top+plotHeight/2, html.EscapeString(c.YLabel))

	for i, s := range c.Series {
		color := palette[s.Color%len(palette)]
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		var pts bytes.Buffer
		for j, p := range s.Points {
			if j > 0 {
				pts.WriteByte(' ')
			}
			fmt.Fprintf(&pts, "%.1f,%.1f", x(p.X), y(p.Y))
		}
		fmt.Fprintf(&b, `<polyline class="series" fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", color, dash, pts.String())
		for _, p := range s.Points {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", x(p.X), y(p.Y), color)
		}
		ly := legendY + i*legendDY
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", legendX, ly, legendX+28, ly, color, dash)
		fmt.Fprintf(&b, `<text class="legend" x="%d" y="%d">%s</text>`+"\n", legendX+34, ly+4, html.EscapeString(s.Name))
	}
	b.WriteString("</svg>\n")
	return b.Bytes(), nil
}

// ranges returns the decades, as powers of ten, that hold every point on
// each axis: [floor(log10 min), ceil(log10 max)], at least one decade wide.
func ranges(series []Series) (xs, ys [2]float64, err error) {
	xs, ys = [2]float64{math.Inf(1), math.Inf(-1)}, [2]float64{math.Inf(1), math.Inf(-1)}
	for _, s := range series {
		if len(s.Points) == 0 {
			return xs, ys, fmt.Errorf("plot: series %q has no points", s.Name)
		}
		for _, p := range s.Points {
			if !(p.X > 0 && p.Y > 0) || math.IsInf(p.X, 0) || math.IsInf(p.Y, 0) {
				return xs, ys, fmt.Errorf("plot: series %q: point (%v, %v) has no place on a logarithmic axis", s.Name, p.X, p.Y)
			}
			xs = [2]float64{math.Min(xs[0], p.X), math.Max(xs[1], p.X)}
			ys = [2]float64{math.Min(ys[0], p.Y), math.Max(ys[1], p.Y)}
		}
	}
	return decades(xs), decades(ys), nil
}

func decades(r [2]float64) [2]float64 {
	lo, hi := math.Floor(math.Log10(r[0])), math.Ceil(math.Log10(r[1]))
	if hi == lo {
		hi++
	}
	return [2]float64{lo, hi}
}

// Plain prints a power of ten as a number: 1000, 0.1.
func Plain(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
