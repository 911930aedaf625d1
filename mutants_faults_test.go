package outboxlab

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/search"
)

// A fault the failure does not need must not stay in its counterexample:
// shrunk with faults on, a mutant's program is at most its faults-off
// length plus the faults it kept. OUTBOXLAB_WRITE_FAULTS_TABLE=SEEDS (a
// comma list) measures every mutant on those seeds with faults off and on
// (the default check's faults: lost requests and replies, restarts) and
// writes the table between docs/evidence.md's "faults table" markers.

func writingFaultsTable() []uint64 {
	v := os.Getenv("OUTBOXLAB_WRITE_FAULTS_TABLE")
	if v == "" {
		return nil
	}
	var seeds []uint64
	for _, f := range strings.Split(v, ",") {
		s, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil || s == 0 {
			panic(fmt.Sprintf("OUTBOXLAB_WRITE_FAULTS_TABLE=%q: want seeds, such as 1,2,3", v))
		}
		seeds = append(seeds, s)
	}
	return seeds
}

// faultsKept counts the faults p holds: a step's lost request or reply or
// stuck commit, and a server's restart, crash, failover, flush or stall.
func faultsKept(p machine.Program) int {
	n := 0
	for _, s := range p.Steps {
		if s.Fault != "" || s.Op.Kind.ServerFault() {
			n++
		}
	}
	return n
}

// writeFaultsTable measures the catalogue over seeds, faults off and on.
func writeFaultsTable(t *testing.T, seeds []uint64) {
	honestSearch(t)
	start := time.Now()
	var rows []string
	mutants, held, runs, compared := 0, 0, 0, 0
	var worst time.Duration
	var broken, other []string
	for _, m := range protocolFiles(t, mutantDir) {
		mutants++
		var off, on, kept, shrink, bound []string
		for _, seed := range seeds {
			var a, b measured
			t.Run(fmt.Sprintf("%s/seed=%d/faults=off", m.name, seed), func(t *testing.T) { a = measureProtocol(t, m, mutantConfig(), &seed) })
			t.Run(fmt.Sprintf("%s/seed=%d/faults=on", m.name, seed), func(t *testing.T) { b = measureProtocol(t, m, machine.Default(), &seed) })
			runs++
			off = append(off, caughtSteps(a))
			on = append(on, caughtSteps(b))
			k := faultsKept(b.recorded)
			kept = append(kept, fmt.Sprint(k))
			shrink = append(shrink, (b.total - b.toFind).Round(100*time.Millisecond).String())
			worst = max(worst, b.total-b.toFind)
			switch {
			case !a.caught || !b.caught:
				bound = append(bound, "missed")
			case !search.SameRule(a.rule, b.rule):
				// Another failure, whose minimum the faults-off run never
				// measured: no bound to hold it to.
				bound = append(bound, "other rule")
				other = append(other, fmt.Sprintf("`%s` seed %d (%s; faults off: %s)", m.name, seed, b.rule, a.rule))
			case b.steps <= a.steps+k:
				bound = append(bound, "yes")
				held++
				compared++
			default:
				bound = append(bound, "no")
				compared++
				broken = append(broken, fmt.Sprintf("`%s` seed %d", m.name, seed))
			}
		}
		rows = append(rows, fmt.Sprintf("| `%s` | %s | %s | %s | %s | %s |", m.name,
			strings.Join(off, ", "), strings.Join(on, ", "), strings.Join(kept, ", "), strings.Join(shrink, ", "), strings.Join(bound, ", ")))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Measured by `OUTBOXLAB_WRITE_FAULTS_TABLE=%s go test -run 'TestMutantsCaught$' -timeout 3h .` at commit %s on %s, "+
		"on %d cores (load average %s when it ended), in %v: every mutant once per seed, the default budget (100 checks) with faults off "+
		"and with the default check's faults on, each found by rapid and shrunk by search.Searcher.Minimize. *Steps* counts the shrunk "+
		"counterexample's steps, the drain's included; *faults kept* counts the faults the faults-on counterexample holds (a lost request or "+
		"reply, a stuck commit, a restart, crash, failover, flush or stall); *shrunk in* runs from the first failing check to the shrunk "+
		"counterexample, faults on; *bound* says whether the faults-on length is at most the faults-off length plus the faults kept, "+
		"where both break the same rule (*other rule* where the faults-on run found another failure, one the faults-off run did not measure).\n\n",
		joinSeeds(seeds), headCommit(), time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), loadAverage(), time.Since(start).Round(time.Second))
	fmt.Fprintf(&b, "**%d mutants × %s (%d runs): the bound holds on %d of the %d that broke the same rule both ways; the slowest shrink with faults on took %v.**",
		mutants, plural(len(seeds), "seed"), runs, held, compared, worst.Round(100*time.Millisecond))
	if len(broken) > 0 {
		fmt.Fprintf(&b, " It does not hold on %s.", strings.Join(broken, ", "))
	}
	if len(other) > 0 {
		fmt.Fprintf(&b, " Another rule with faults on: %s.", strings.Join(other, ", "))
	}
	b.WriteString("\n\n| mutant | steps, faults off | steps, faults on | faults kept | shrunk in, faults on | bound |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		b.WriteString(r + "\n")
	}
	replaceBetween(t, mutantsDoc, "faults table", b.String())
}

// caughtSteps is a measurement's shrunk length, or "missed".
func caughtSteps(r measured) string {
	if !r.caught {
		return "missed"
	}
	return fmt.Sprint(r.steps)
}

func joinSeeds(seeds []uint64) string {
	var out []string
	for _, s := range seeds {
		out = append(out, fmt.Sprint(s))
	}
	return strings.Join(out, ",")
}

// plural is "1 seed" or "5 seeds".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
