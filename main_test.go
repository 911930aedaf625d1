package outboxlab

import (
	"context"
	"flag"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/worker"
)

// TestMain lets this test binary double as a worker process, and stops the
// binary's one PostgreSQL server when the tests end.
func TestMain(m *testing.M) {
	worker.MainIfWorker()
	searchFromScratch()
	runMoreAtOnce()
	os.Exit(func() int {
		defer pgserver.CloseShared()
		defer closeTopologyServers()
		return m.Run()
	}())
}

// install puts a protocol (built-in name or file) in a fresh schema of the
// shared server; the schema is dropped when the test ends.
func install(t testing.TB, protocol string) *sut.Instance {
	t.Helper()
	srv, err := pgserver.Shared()
	if err != nil {
		t.Fatal(err)
	}
	p, err := sut.Resolve(protocol)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inst, err := sut.Install(ctx, srv.ConnString(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inst.Close)
	return inst
}

// searchFromScratch sets rapid's defaults for this binary, once, before
// any test runs (its flags are global, so tests running in parallel must
// not set them): no fail files, whose replay would make time-to-catch
// meaningless (counterexamples are kept as programs in
// testdata/regressions), and no rapid shrinking, which with every action
// enabled takes thousands of checks and still leaves tens of steps, where
// search.Searcher.Minimize shrinks the printed program by replaying it. The
// command line and the RAPID_ variables still win.
func searchFromScratch() {
	for name, value := range map[string]string{"rapid.nofailfile": "true", "rapid.shrinktime": "0s"} {
		env := "RAPID_" + strings.ToUpper(strings.TrimPrefix(name, "rapid."))
		if _, set := os.LookupEnv(env); !set {
			flag.Lookup(name).Value.Set(value) // not marked set: see setRapidFlag
		}
	}
}

// runMoreAtOnce lets twice as many of this package's parallel tests run at
// once as there are CPUs (go test's default is as many): a check spends
// most of its time waiting on its worker processes and the server, one
// process waking the next, and on two cores two checks at a time left a
// fifth of the CPU idle. Run alone on a two-core machine, `go test -count=1
// .` took 481 s with -parallel 2 and 372 and 402 s with 4, the same tests;
// inside `go test ./...`, beside the other packages, 494 s against 492.
// -parallel still wins.
func runMoreAtOnce() {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if f := flag.Lookup("test.parallel"); f != nil && !set {
		f.Value.Set(strconv.Itoa(2 * runtime.GOMAXPROCS(0)))
	}
}
