package outboxlab

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/search"
)

// The library catalogue: testdata/libraries holds one protocol file per
// real queue library, from its own SQL at a pinned commit (each file's
// header names it and lists every adaptation), and testdata/libraries/fixed
// the smallest change to that SQL that makes it pass. The table in docs/libraries.md
// of libraries by properties is these files' profiles.
// profileShrink is the shrinking by replay a pinned profile gets: almost
// none (one confirming replay).
const profileShrink = time.Millisecond

const (
	libraryDir = "testdata/libraries"
	fixedDir   = "testdata/libraries/fixed"
)

// TestLibraryProfiles pins each library's profile: the properties its SQL
// breaks, each found with its own counterexample while the ones found
// before it are relaxed. Its file's "-- profile:" line lists those found on
// every seed tried (or "none"), "-- profile-sometimes:" those a search
// finds on some seeds only, and "-- profile-stopped:" the failures of no
// property that may end its profile, " | " between them (a pinned property
// whose verdict is then unknown is not required). The search runs from
// rapid seed 1, without faults, so a run is the docs' (docs/libraries.md); the pins still
// hold for the other seeds tried (see docs/libraries.md). A change to the suite
// that alters a verdict shows here: CI checks ciProfileLibraries' pins,
// the nightly every library's (tier_test.go).
func TestLibraryProfiles(t *testing.T) {
	honestSearch(t)
	setRapidFlag(t, "rapid.seed", "1")
	for _, lib := range protocolFiles(t, libraryDir) {
		t.Run(lib.name, func(t *testing.T) {
			if !ciProfileLibraries[lib.name] {
				nightlyOnly(t, "this library's profile")
			}
			t.Parallel()
			always, err := pinnedProfile(lib.path, "-- profile:")
			if err != nil {
				t.Fatal(err)
			}
			sometimes, _ := pinnedProfile(lib.path, "-- profile-sometimes:")
			stops := strings.Split(pinnedLine(lib.path, "-- profile-stopped:"), " | ")
			checkProfile(t, lib, harness(t, lib.path, catalogueConfig()), always, sometimes, stops)
		})
	}
}

// TestLibraryProfilesBehindATransactionPooler pins the profile of each
// library whose file has a "-- profile-pooler-transaction:" line (the
// session-lease libraries, whose verdicts a transaction pooler changes:
// docs/topologies.md) on that topology, as TestLibraryProfiles does on
// single.
//
// The nightly tier's (que's alone takes five minutes of two cores); CI
// holds que's catch behind that pooler (TestSessionLeaseNeedsItsSession).
func TestLibraryProfilesBehindATransactionPooler(t *testing.T) {
	nightlyOnly(t, "the profiles behind a transaction pooler")
	honestSearch(t)
	setRapidFlag(t, "rapid.seed", "1")
	const prefix = "-- profile-pooler-transaction:"
	pinned := 0
	for _, lib := range protocolFiles(t, libraryDir) {
		if pinnedLine(lib.path, prefix) == "" {
			continue
		}
		pinned++
		t.Run(lib.name, func(t *testing.T) {
			t.Parallel()
			always, err := pinnedProfile(lib.path, prefix)
			if err != nil {
				t.Fatal(err)
			}
			h := topologyHarness(t, pgserver.PoolerTransaction, lib.path, catalogueConfig())
			checkProfile(t, lib, h, always, 0, []string{""})
		})
	}
	if pinned == 0 {
		t.Fatalf("no library file pins a profile behind a transaction pooler (%s)", prefix)
	}
}

// checkProfile runs lib's profile on h and holds it to its pins: always,
// the properties broken on every seed tried; sometimes, those broken on
// some; stops, the failures of no property that may end it.
func checkProfile(t *testing.T, lib protocolFile, h *machine.Harness, always, sometimes model.Property, stops []string) {
	t.Helper()
	// The pins are verdicts, not counterexamples: no time goes to
	// shrinking them (Solid Queue's replays slowly), which leaves the
	// verdict as it is. The docs' come from --shrink-time 60s.
	p := search.On(h).Profile(t.Name(), profileShrink)
	var unknown model.Property
	programs := map[model.Property][]string{}
	for _, f := range p.Findings {
		switch f.Verdict {
		case search.Breaks:
			t.Logf("%v: %s (%d steps, relaxed: %v)", f.Property, f.Catch.Failure.Rule, f.Catch.Steps(), f.Relaxed)
			programs[f.Property] = f.Catch.Program
		case search.Unknown:
			unknown |= f.Property
		}
	}
	if c := p.Stopped; c != nil {
		rule := "(no violation)"
		if c.Failure != nil {
			rule = c.Failure.Rule
		}
		if !slices.Contains(stops, rule) {
			t.Errorf("the profile stopped at %q, its file pins %q:\n%s", rule, stops, strings.Join(c.Program, "\n"))
		}
	}
	broken := p.Broken()
	if missing := always &^ broken &^ unknown; missing != 0 {
		t.Errorf("%s no longer breaks %v (it breaks %v)", lib.name, missing, broken)
	}
	if extra := broken &^ always &^ sometimes; extra != 0 {
		// With the program: a break nobody pinned is a finding, or the
		// harness's own fault, and the next engineer must be able to
		// tell which without rerunning the profile.
		t.Errorf("%s now breaks %v, which its file does not pin", lib.name, extra)
		for _, prop := range model.Properties {
			if extra&prop != 0 {
				t.Errorf("%v broken by:\n%s", prop, strings.Join(programs[prop], "\n"))
			}
		}
	}
}

// TestFixedLibrariesPass: every fixed variant passes the default budget.
func TestFixedLibrariesPass(t *testing.T) {
	honestSearch(t)
	passBudget(t)
	for _, lib := range protocolFiles(t, fixedDir) {
		t.Run(lib.name, func(t *testing.T) {
			t.Parallel()
			r := measureProtocol(t, lib, catalogueConfig(), nil)
			if r.caught {
				t.Errorf("the fixed %s fails: %s\n%s", lib.name, r.rule, strings.Join(r.program, "\n"))
			}
		})
	}
}

// pinnedLine is the text after prefix on a file's line that starts with
// it, or "".
func pinnedLine(path, prefix string) string {
	b, _ := os.ReadFile(path)
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// pinnedProfile reads a library file's "PREFIX PROPERTY ..." line: 0 when
// it has none.
func pinnedProfile(path, prefix string) (model.Property, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), prefix)
		if !ok {
			continue
		}
		var out model.Property
		for _, name := range strings.Fields(rest) {
			if name == "none" {
				continue
			}
			p, ok := model.ParseProperty(name)
			if !ok {
				return 0, fmt.Errorf("%s: profile line names %q, not a property", path, name)
			}
			out |= p
		}
		return out, nil
	}
	if prefix == "-- profile:" {
		return 0, fmt.Errorf("%s: no \"-- profile:\" line pins its profile", path)
	}
	return 0, nil
}
