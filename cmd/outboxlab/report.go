package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/report"
	"github.com/outboxlab/outboxlab/search"
)

// reportFlag is check's --report FILE: on a failure, the shrunk program is
// replayed once more with the recorder and drawn as one HTML page.
type reportFlag struct {
	path string
	// perProtocol is set when more than one protocol is checked: each
	// failure then gets its own file, FILE with -PROTOCOL before the
	// extension, so that one cannot overwrite another.
	perProtocol bool
}

func addReportFlag(fs *flag.FlagSet, r *reportFlag) {
	fs.StringVar(&r.path, "report", "", "on a failure, write the counterexample as a self-contained HTML page to this file (with several protocols, FILE-PROTOCOL.html each) (docs/report.md)")
}

// prepare checks the flag before anything runs: a directory that does
// not exist, or --profile (whose counterexamples are one per property),
// is bad input.
func (r *reportFlag) prepare(profile bool, protocols int) error {
	if r.path == "" {
		return nil
	}
	if profile {
		return fmt.Errorf("--report: not with --profile")
	}
	if info, err := os.Stat(filepath.Dir(r.path)); err != nil || !info.IsDir() {
		return fmt.Errorf("--report %s: no directory %s", r.path, filepath.Dir(r.path))
	}
	r.perProtocol = protocols > 1
	return nil
}

// file is where the report of protocol's failure goes.
func (r reportFlag) file(protocol string) string {
	if !r.perProtocol {
		return r.path
	}
	ext := filepath.Ext(r.path)
	name := strings.Map(func(c rune) rune {
		if c == '/' || c == os.PathSeparator {
			return '_'
		}
		return c
	}, protocol)
	return strings.TrimSuffix(r.path, ext) + "-" + name + ext
}

// writeReport replays the shrunk program of a failed check with the
// recorder, writes its page and prints the page's path on stderr. A
// program its replay cannot run (a failure at the setup) gets a page of
// its printed lines, without rows, and says so. A page that
// cannot be written is said too; the verdict stands either way.
func writeReport(r reportFlag, h *machine.Harness, c search.Catch, res checkResult, stderr io.Writer) {
	if r.path == "" {
		return
	}
	tr, err := report.ForCatch(h, c, res.Reproduce)
	if err != nil {
		fmt.Fprintf(stderr, "%s: no report: %v\n", res.Protocol, err)
		return
	}
	if tr.NotReplayed != "" {
		fmt.Fprintf(stderr, "%s: the report shows the printed program without rows: %s\n", res.Protocol, tr.NotReplayed)
	} else if tr.Violation == nil || !search.SameRule(tr.Violation.Rule, c.Failure.Rule) {
		fmt.Fprintf(stderr, "%s: the replay for the report did not fail as the search did (the protocol fails this program only sometimes); the page shows the replay\n", res.Protocol)
	}
	path, err := report.Write(r.file(res.Protocol), tr)
	if err != nil {
		fmt.Fprintf(stderr, "%s: no report: %v\n", res.Protocol, err)
		return
	}
	fmt.Fprintf(stderr, "%s: report: %s\n", res.Protocol, path)
}
