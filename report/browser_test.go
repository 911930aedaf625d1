package report_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/outboxlab/outboxlab/report"
)

// TestReportInBrowser opens the report of a replayed counterexample in a
// real headless Chromium, from disk: no console error, no exception, no
// request off the file itself, and the violating step visible in the
// viewport with its rule. The full-page screenshot is kept as a CI
// artifact. The mutant is the same page with a script that throws, an
// image from the network and no violation element: the same checks must
// find all three.
func TestReportInBrowser(t *testing.T) {
	chromium := chromiumPath(t)
	tr := traceOf(t, "baseline", staleComplete)
	dir := reapedDir(t)
	path, err := report.Write(filepath.Join(dir, "report.html"), tr)
	if err != nil {
		t.Fatal(err)
	}
	before := chromiumTempDirs(t)
	ctx := browser(t, chromium, filepath.Join(dir, "profile"))
	shot, problems := inspect(t, ctx, path, staleRule)
	if len(problems) > 0 {
		t.Errorf("the report in Chromium:\n%s", strings.Join(problems, "\n"))
	}
	for _, d := range chromiumTempDirs(t) {
		if !slices.Contains(before, d) {
			t.Errorf("Chromium made %s outside the test's directory: it would outlive the run", d)
		}
	}
	keep := filepath.Join(artifacts(t), "report-baseline.png")
	if err := os.WriteFile(keep, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	kept, _ := filepath.Abs(keep)
	t.Logf("screenshot: %s (report: %s)", kept, path)
	fmt.Println("report screenshot:", kept)

	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(page), `id="violation"`, `id="elsewhere"`, 1)
	broken = strings.Replace(broken, "</body>", `<img src="http://192.0.2.1/x.png"><script>null.mutant</script></body>`, 1)
	mutant := filepath.Join(dir, "mutant.html")
	if err := os.WriteFile(mutant, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	_, problems = inspect(t, ctx, mutant, staleRule)
	found := strings.Join(problems, "\n")
	for _, want := range []string{"exception", "request off the file", "no violating step"} {
		if !strings.Contains(found, want) {
			t.Errorf("mutant broken_page: the checks found no %q; they found:\n%s", want, found)
		}
	}
}

// chromiumTempDirs are the directories Chromium makes for its singleton
// socket in the system's temporary directory.
func chromiumTempDirs(t *testing.T) []string {
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), "org.chromium.Chromium.*"))
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// chromiumPath is Debian's chromium. A test without it fails: .ci/run
// installs it.
func chromiumPath(t *testing.T) string {
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("no chromium on PATH: install Debian's (apt-get install chromium), as .ci/run does")
	}
	return path
}

// browser starts a headless Chromium with a fresh profile in profile,
// ended with the test (and, the test binary killed, by the kernel: chromedp
// starts it with Pdeathsig). Its TMPDIR is profile's directory, so that
// the directory it makes there for its singleton socket
// (org.chromium.Chromium.*), which it leaves behind, goes with the test's
// reaped directory: in /tmp two of them outlived every run of the suite.
func browser(t *testing.T, chromium, profile string) context.Context {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.Env("TMPDIR=" + filepath.Dir(profile)),
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile), chromedp.WindowSize(1280, 800),
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc(); cancel() })
	return bctx
}

// inspect loads the file at path in a new tab and returns a full-page
// screenshot and everything wrong: console errors and warnings,
// exceptions, log errors, requests for anything but the file itself, and
// a violating step that is missing, outside the viewport or without rule.
func inspect(t *testing.T, bctx context.Context, path, rule string) ([]byte, []string) {
	ctx, cancel := chromedp.NewContext(bctx)
	defer cancel()
	url := "file://" + path
	var mu sync.Mutex
	var problems []string
	report := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	if err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				report("console %s", ev.Type)
			}
		case *runtime.EventExceptionThrown:
			report("exception: %s", ev.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError {
				report("log error: %s", ev.Entry.Text)
			}
		case *network.EventRequestWillBeSent:
			if ev.Request.URL != url && !strings.HasPrefix(ev.Request.URL, "data:") {
				report("request off the file: %s", ev.Request.URL)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	const where = `(() => {
		const v = document.getElementById("violation");
		if (!v) return "none";
		const r = v.getBoundingClientRect();
		const inView = r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight;
		return (inView ? "visible " : "outside the viewport ") + v.innerText;
	})()`
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](where))
	switch {
	case err != nil:
		t.Fatal(err)
	case got == "none":
		report("no violating step on the page")
	case !strings.HasPrefix(got, "visible "):
		report("the violating step is %s", strings.SplitN(got, "\n", 2)[0])
	case !strings.Contains(got, rule):
		report("the violating step does not say %q: %q", rule, got)
	}
	// The page scrolled itself to the violation; a full-page shot from
	// the top keeps the sticky table header where it belongs.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any]("window.scrollTo(0, 0)")); err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // events still on their way
	mu.Lock()
	defer mu.Unlock()
	return shot, append([]string(nil), problems...)
}

// artifacts is where CI keeps what a run leaves for people to look at:
// $OUTBOXLAB_ARTIFACTS, or artifacts/ at the top of the repository
// (ignored by git).
func artifacts(t *testing.T) string {
	dir := os.Getenv("OUTBOXLAB_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// reapedDir is a temporary directory removed when the test ends or, if
// the test binary is killed, by a small reaper that waits for the binary's
// end on a pipe (as pgserver's does for its cluster): the browser's
// profile and the pages outlive no run.
func reapedDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "outboxlab-report-")
	if err != nil {
		t.Fatal(err)
	}
	reaper := exec.Command("/bin/sh", "-c", `cat >/dev/null; rm -rf "$1"`, "outboxlab-report-reaper", dir)
	reaper.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // not in the test's process group
	alive, err := reaper.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := reaper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.RemoveAll(dir)
		alive.Close() // the reaper finds nothing left and exits
		reaper.Wait()
	})
	return dir
}
