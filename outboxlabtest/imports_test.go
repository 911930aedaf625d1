package outboxlabtest_test

import (
	"testing"

	"github.com/outboxlab/outboxlab/internal/importgraph"
)

// TestLightImports: a team's test binary links what outboxlabtest, its
// worker processes and the driver contract need, and none of the heavy
// modules (importgraph.Heavy): not the Docker client (pgserver/docker
// has it), not Kafka (worker/relayops and broker), not a toxiproxy
// server with Prometheus, gorilla/mux, zerolog and logrus (the fault
// proxies are internal/cutproxy; the toxiproxy client stays, for an
// external server). examples/gopgx is such a module: its whole test
// binary is checked, tests included.
func TestLightImports(t *testing.T) {
	for _, c := range []struct {
		name, dir string
		tests     bool
		pkgs      []string
	}{
		{name: "outboxlabtest, worker, driver", dir: ".", pkgs: []string{".", "../worker", "../driver"}},
		{name: "examples/gopgx's test binary", dir: "../examples/gopgx", tests: true, pkgs: []string{"."}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := importgraph.Load(c.dir, c.tests, c.pkgs...)
			if err != nil {
				t.Fatal(err)
			}
			if len(g.Roots) == 0 {
				t.Fatalf("go list found no package in %s", c.dir)
			}
			for _, v := range g.Heavy() {
				t.Errorf("heavy module linked: %s", v)
			}
		})
	}
}
