package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/internal/importgraph"
)

// TestLinksPgxAndTheWorkerLoopOnly: every package the small worker links
// outside the standard library is pgx's (and the x/ packages it needs) or
// one of the suite's few the worker loop runs. Its start-up is what a kill
// costs; a package added to this list is a package every kill initialises.
func TestLinksPgxAndTheWorkerLoopOnly(t *testing.T) {
	const root = "github.com/outboxlab/outboxlab/"
	ours := []string{root + "cmd/outboxlab-worker", root + "worker", root + "workerproto", root + "sut",
		root + "model", root + "driver", root + "broker/payload", root + "internal/proc"}
	g, err := importgraph.Load(".", false, ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Imports) < len(ours) {
		t.Fatalf("go list found %d packages, fewer than the worker's own %d", len(g.Imports), len(ours))
	}
	for pkg := range g.Imports {
		first, _, _ := strings.Cut(pkg, "/")
		switch {
		case !strings.Contains(first, "."): // the standard library
		case strings.HasPrefix(pkg, "github.com/jackc/"), strings.HasPrefix(pkg, "golang.org/x/"):
		case slices.Contains(ours, pkg):
		default:
			t.Errorf("the worker links %s (imported by %s)", pkg, importer(g, pkg))
		}
	}
}

// importer is a package of g that imports pkg.
func importer(g *importgraph.Graph, pkg string) string {
	for p, imports := range g.Imports {
		if slices.Contains(imports, pkg) {
			return p
		}
	}
	return "?"
}
