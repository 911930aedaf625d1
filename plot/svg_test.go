package plot

import (
	"encoding/xml"
	"math"
	"strings"
	"testing"
)

func line(name string, color int, dashed bool, pts ...float64) Series {
	s := Series{Name: name, Color: color, Dashed: dashed}
	for i := 0; i+1 < len(pts); i += 2 {
		s.Points = append(s.Points, Point{pts[i], pts[i+1]})
	}
	return s
}

// TestSVGDrawsEverySeries: a line, its points and a legend entry per
// series; a grid line and a label per decade on each axis; well-formed XML.
func TestSVGDrawsEverySeries(t *testing.T) {
	svg, err := SVG(Chart{Title: "t <&>", XLabel: "x", YLabel: "y", Series: []Series{
		line("a p50", 0, false, 1e3, 80, 1e4, 90, 1e5, 400),
		line("a p99", 0, true, 1e3, 150, 1e4, 160, 1e5, 2500),
	}})
	if err != nil {
		t.Fatal(err)
	}
	s := string(svg)
	if err := xml.Unmarshal(svg, new(struct{})); err != nil {
		t.Fatalf("not well-formed: %v\n%s", err, s)
	}
	for what, want := range map[string]int{
		"<polyline": 2, "<circle": 6, `class="legend"`: 2, "stroke-dasharray": 2, // the p99's line and its legend
		// x: 1e3 to 1e5 is 3 decades; y: 10 to 1e4 is 4.
		`class="tick"`: 3 + 4, "t &lt;&amp;&gt;": 1,
	} {
		if got := strings.Count(s, what); got != want {
			t.Errorf("%d of %q, want %d", got, what, want)
		}
	}
}

// TestSVGRefusesWhatALogAxisCannotShow: a zero, a negative, NaN or an
// infinity, an empty series and no series at all are errors naming the
// series, not a picture.
func TestSVGRefusesWhatALogAxisCannotShow(t *testing.T) {
	for name, c := range map[string]Chart{
		"zero":     {Series: []Series{line("z", 0, false, 1e3, 0)}},
		"negative": {Series: []Series{line("n", 0, false, -1, 5)}},
		"nan":      {Series: []Series{line("q", 0, false, 1e3, math.NaN())}},
		"inf":      {Series: []Series{line("i", 0, false, math.Inf(1), 5)}},
		"empty":    {Series: []Series{line("e", 0, false)}},
		"none":     {},
	} {
		if _, err := SVG(c); err == nil {
			t.Errorf("%s: no error", name)
		} else if name != "none" && !strings.Contains(err.Error(), `"`+c.Series[0].Name+`"`) {
			t.Errorf("%s: %v does not name the series", name, err)
		}
	}
}

func TestDecades(t *testing.T) {
	for _, c := range []struct{ lo, hi, want0, want1 float64 }{
		{1000, 1e6, 3, 6}, {55, 2400, 1, 4}, {100, 100, 2, 3}, {0.5, 3, -1, 1},
	} {
		if got := decades([2]float64{c.lo, c.hi}); got != [2]float64{c.want0, c.want1} {
			t.Errorf("decades(%v, %v) = %v, want [%v %v]", c.lo, c.hi, got, c.want0, c.want1)
		}
	}
}
