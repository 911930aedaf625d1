package plot_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/outboxlab/outboxlab/bench"
)

// TestBacklogPlotInBrowser opens the backlog plot in a real headless
// Chromium, from disk: the one `bench --backlog --svg` draws from a
// backlog result, and the one docs/backlog.md shows. In each, Chromium
// must find a drawn line (a box wider and taller than nothing, inside the
// picture) for each legend entry, a p50 and a p99 per protocol, and every
// line's colour on the screenshot. The mutants, a plot missing a line, one
// with a point thrown off the picture and one whose lines are painted
// over, must fail the same checks.
func TestBacklogPlotInBrowser(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("no chromium on PATH: install Debian's (apt-get install chromium), as .ci/run does")
	}
	dir := reapedDir(t)
	svg, err := bench.BacklogPlot(threeProtocols())
	if err != nil {
		t.Fatal(err)
	}
	drawn := filepath.Join(dir, "drawn.svg")
	if err := os.WriteFile(drawn, svg, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := browser(t, chromium, filepath.Join(dir, "profile"))
	if problems := inspect(t, ctx, drawn, 6); len(problems) > 0 {
		t.Errorf("the drawn plot in Chromium:\n  %s", strings.Join(problems, "\n  "))
	}
	docs, err := filepath.Abs(filepath.Join("..", "docs", "img", "backlog.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if problems := inspect(t, ctx, docs, -1); len(problems) > 0 {
		t.Errorf("docs/img/backlog.svg in Chromium:\n  %s", strings.Join(problems, "\n  "))
	}

	for name, c := range map[string]struct{ broken, want string }{
		"line_missing":   {strings.Replace(string(svg), "<polyline", "<desc", 1), "legend entries"},
		"point_off_plot": {strings.Replace(string(svg), `points="`, `points="9000,9000 `, 1), "outside the picture"},
		"covered":        {strings.Replace(string(svg), "</svg>", `<rect width="100%" height="100%" fill="#ffffff"/></svg>`, 1), "pixels of its colour"},
	} {
		path := filepath.Join(dir, name+".svg")
		if err := os.WriteFile(path, []byte(c.broken), 0o644); err != nil {
			t.Fatal(err)
		}
		if found := strings.Join(inspect(t, ctx, path, 6), "\n"); !strings.Contains(found, c.want) {
			t.Errorf("mutant %s: the checks found no %q; they found:\n%s", name, c.want, found)
		}
	}
}

// threeProtocols is a backlog result of three protocols at four sizes:
// one flat, one that grows with the table, one in between.
func threeProtocols() bench.Backlog {
	var b bench.Backlog
	for i, name := range []string{"leased", "leased_partial_index", "river"} {
		p := bench.ProtocolBacklog{Protocol: name}
		for j, n := range []int{1e3, 1e4, 1e5, 1e6} {
			p50 := 70 * float64(1+i*j*j)
			p.Sizes = append(p.Sizes, bench.SizeResult{Events: n, Latency: []bench.Latency{
				{Connections: 1, P50US: p50, P99US: 2 * p50}, {Connections: 4, P50US: 3 * p50, P99US: 9 * p50}}})
		}
		b.Protocols = append(b.Protocols, p)
	}
	return b
}

// measure is what Chromium sees of a plot: the legend's entries, and for
// each drawn line its stroke colour and whether its box spans the x axis
// (a flat line has no height) and lies inside the picture.
const measure = `(() => {
	const svg = document.querySelector("svg");
	if (!svg) return JSON.stringify({legend: 0, lines: []});
	const w = svg.viewBox.baseVal.width, h = svg.viewBox.baseVal.height;
	const lines = [...document.querySelectorAll("polyline")].map(l => {
		const b = l.getBBox();
		return {stroke: l.getAttribute("stroke"), drawn: b.width > 0,
			inside: b.x >= 0 && b.y >= 0 && b.x + b.width <= w && b.y + b.height <= h};
	});
	return JSON.stringify({legend: document.querySelectorAll("text.legend").length, lines});
})()`

type seen struct {
	Legend int
	Lines  []struct {
		Stroke        string
		Drawn, Inside bool
	}
}

// inspect loads the SVG at path in a new tab and returns everything wrong
// with it: a legend entry without its line (or the other way round), a
// count of lines other than want (-1: any, at least two), a line with no
// width or outside the picture, a line whose colour is not on the
// screenshot.
func inspect(t *testing.T, bctx context.Context, path string, want int) []string {
	ctx, cancel := chromedp.NewContext(bctx)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+path)); err != nil {
		t.Fatal(err)
	}
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](measure))
	if err != nil {
		t.Fatal(err)
	}
	var got seen
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	if len(got.Lines) == 0 || (want >= 0 && len(got.Lines) != want) || (want < 0 && len(got.Lines) < 2) {
		problems = append(problems, fmt.Sprintf("%d lines drawn, want %d", len(got.Lines), want))
	}
	if len(got.Lines) != got.Legend {
		problems = append(problems, fmt.Sprintf("%d lines for %d legend entries", len(got.Lines), got.Legend))
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range got.Lines {
		if !l.Drawn || !l.Inside {
			problems = append(problems, fmt.Sprintf("line %d (%s): drawn %v, inside the picture %v: outside the picture or empty", i+1, l.Stroke, l.Drawn, l.Inside))
		}
		if n := pixelsOf(img, l.Stroke); n < 20 {
			problems = append(problems, fmt.Sprintf("line %d: %d pixels of its colour %s on the screenshot", i+1, n, l.Stroke))
		}
	}
	return problems
}

// pixelsOf counts the screenshot's pixels within a small distance of the
// colour #rrggbb (anti-aliasing blends a line's edges, not its middle).
func pixelsOf(img image.Image, hex string) int {
	var r0, g0, b0 int
	if _, err := fmt.Sscanf(hex, "#%02x%02x%02x", &r0, &g0, &b0); err != nil {
		return 0
	}
	n := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if abs(int(r>>8)-r0)+abs(int(g>>8)-g0)+abs(int(b>>8)-b0) < 24 {
				n++
			}
		}
	}
	return n
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// browser starts a headless Chromium with a fresh profile, ended with the
// test (chromedp starts it with Pdeathsig). Its TMPDIR is the profile's
// directory, where it leaves the directory of its singleton socket.
func browser(t *testing.T, chromium, profile string) context.Context {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.Env("TMPDIR=" + filepath.Dir(profile)),
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(profile), chromedp.WindowSize(900, 600),
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc(); cancel() })
	return bctx
}

// reapedDir is a temporary directory removed when the test ends or, the
// test binary killed, by a shell that waits for the binary's end on a
// pipe: the browser's profile and the files outlive no run.
func reapedDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "outboxlab-plot-")
	if err != nil {
		t.Fatal(err)
	}
	reaper := exec.Command("/bin/sh", "-c", `cat >/dev/null; rm -rf "$1"`, "outboxlab-plot-reaper", dir)
	reaper.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	alive, err := reaper.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := reaper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.RemoveAll(dir)
		alive.Close()
		reaper.Wait()
	})
	return dir
}
