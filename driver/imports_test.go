package driver_test

import (
	"testing"

	"github.com/outboxlab/outboxlab/internal/importgraph"
)

// TestLightImports: a Go driver's package imports driver, so whatever
// driver links, every user's binary does; none of the heavy modules
// (importgraph.Heavy) may reach it.
func TestLightImports(t *testing.T) {
	g, err := importgraph.Load(".", false, ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Roots) != 1 || len(g.Imports) < 2 {
		t.Fatalf("go list: roots %v, %d packages: want driver and what it imports", g.Roots, len(g.Imports))
	}
	for _, v := range g.Heavy() {
		t.Errorf("heavy module linked: %s", v)
	}
}
