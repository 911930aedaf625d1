package importgraph

import (
	"slices"
	"strings"
	"testing"
)

func TestHeavyModule(t *testing.T) {
	for pkg, want := range map[string]string{
		"github.com/Shopify/toxiproxy/v2":         "github.com/Shopify/toxiproxy/v2",
		"github.com/Shopify/toxiproxy/v2/toxics":  "github.com/Shopify/toxiproxy/v2",
		"github.com/Shopify/toxiproxy/v2/client":  "",
		"github.com/docker/docker/api/types":      "github.com/docker",
		"github.com/dockerx/y":                    "",
		"github.com/twmb/franz-go/pkg/kfake":      "github.com/twmb/franz-go",
		"github.com/prometheus/client_golang/foo": "github.com/prometheus",
		"github.com/jackc/pgx/v5":                 "",
	} {
		if got := HeavyModule(pkg); got != want {
			t.Errorf("HeavyModule(%s) = %q, want %q", pkg, got, want)
		}
	}
}

// TestCatchesHeavyPackages: the packages that are meant to hold the heavy
// modules are reported, each with the chain that reaches it; the check
// the light packages pass is one that can fail.
func TestCatchesHeavyPackages(t *testing.T) {
	const root = "github.com/outboxlab/outboxlab/"
	for _, c := range []struct {
		pkg    string
		tests  bool
		module string
		via    string // a package the chain passes through
	}{
		{pkg: "../../pgserver/docker", module: "github.com/ory/dockertest", via: root + "pgserver/docker"},
		{pkg: "../../worker/relayops", module: "github.com/twmb/franz-go", via: root + "worker/relayops"},
		{pkg: "../../cmd/outboxlab", module: "github.com/docker", via: root + "pgserver/docker"},
		// The external-proxy tests run a toxiproxy server; the package
		// itself links only the client.
		{pkg: "../../faults", tests: true, module: "github.com/Shopify/toxiproxy/v2", via: root + "faults"},
	} {
		g, err := Load(".", c.tests, c.pkg)
		if err != nil {
			t.Fatal(err)
		}
		vs := g.Heavy()
		i := slices.IndexFunc(vs, func(v Violation) bool { return v.Module == c.module })
		if i < 0 {
			t.Errorf("%s: %s not reported; got %v", c.pkg, c.module, vs)
			continue
		}
		chain := strings.Join(vs[i].Chain, " -> ")
		if !slices.Contains(vs[i].Chain, c.via) {
			t.Errorf("%s: chain %s does not pass through %s", c.pkg, chain, c.via)
		}
		if m := HeavyModule(vs[i].Chain[len(vs[i].Chain)-1]); m != c.module {
			t.Errorf("%s: chain %s does not end in %s", c.pkg, chain, c.module)
		}
	}
	g, err := Load(".", false, "../../faults")
	if err != nil {
		t.Fatal(err)
	}
	if vs := g.Heavy(); len(vs) > 0 {
		t.Errorf("faults without its tests: %v, want nothing heavy (the toxiproxy client is light)", vs)
	}
}
