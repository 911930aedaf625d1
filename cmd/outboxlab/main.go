// Command outboxlab runs the suite against protocol files: the article's six
// scenarios (scenarios), the state machine (check) and the performance
// figures (bench).
//
// Exit status: 0 every protocol passed, 1 a counterexample or failing
// scenario was found, 2 bad input or no database, 3 no counterexample but a
// run that never exercised a required coverage class (inconclusive).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/outboxlab/outboxlab/pgserver"
	_ "github.com/outboxlab/outboxlab/pgserver/docker" // the last resort for a server, as docs/server.md says
	"github.com/outboxlab/outboxlab/worker"
)

const usage = `usage:
  outboxlab check [flags] [PROTOCOL ...]      run the state machine (default: leased baseline)
  outboxlab scenarios [--json] [PROTOCOL ...]  run the article's six scenario tests
  outboxlab bench [--json]                     measure the suite against the SQL floor
  outboxlab bench --backlog [PROTOCOL ...]     a protocol's claim as its table grows (default: leased)

PROTOCOL is a protocol file or a built-in name (leased, baseline).
check and scenarios run on a single server, or on the deployment
--topology NAME builds (docs/server.md).
Run "outboxlab COMMAND -h" for a command's flags.
`

// Exit statuses.
const (
	exitPass = 0
	exitFail = 1
	exitBad  = 2
	// exitInconclusive: no counterexample, but a required coverage class
	// was never reached, so the pass proves nothing there.
	exitInconclusive = 3
)

func main() {
	worker.MainIfWorker()
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	pgserver.CloseShared()
	os.Exit(code)
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitBad
	}
	switch args[0] {
	case "scenarios":
		return runScenarios(args[1:], stdout, stderr)
	case "check":
		return runCheck(args[1:], stdout, stderr)
	case "bench":
		return runBench(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitPass
	}
	fmt.Fprintf(stderr, "outboxlab: unknown command %q\n%s", args[0], usage)
	return exitBad
}

// parseOnly is a test seam: every command stops right after its flags
// parse, exit status 0, having run, started and read nothing. A flag error
// or an unknown command still exits 2. The docs test (docs_test.go) holds
// each command line in the docs to the real flag sets with it. Every
// command calls parseFlags before anything else; its checks of flag values
// (--workers at least 2, --shard needs --seed) come after, so are skipped.
var parseOnly bool

// parseFlags parses a command's flags; ok is false when the command must
// stop with code. Help (-h, --help) is asked for, not an error: the usage goes
// to stdout with exit status 0. A bad flag gets the flag package's message
// and the usage on stderr, exit status 2. The command's Usage must write to
// fs.Output().
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) (code int, ok bool) {
	usage := fs.Usage
	fs.Usage = func() {} // printed below, where it belongs
	err := fs.Parse(args)
	fs.Usage = usage
	switch {
	case err == nil:
		return exitPass, !parseOnly
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		return exitPass, false
	}
	fs.Usage()
	return exitBad, false
}
