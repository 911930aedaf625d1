// Package importgraph checks what a package links, from the go command's
// own import graph (go list -deps), for the tests that keep a user's test
// binary light: a team that adds outboxlabtest to its module must not
// gain a container runtime's client, a Kafka client or a toxiproxy server
// with its metrics and logging libraries. Each of those lives behind a
// package that only its users import (pgserver/docker, worker/relayops
// and broker, the external-proxy tests).
package importgraph

import (
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"github.com/outboxlab/outboxlab/internal/proc"
)

// Heavy names the modules a user's test binary must not link: the
// prefixes of their import paths.
var Heavy = []string{
	"github.com/docker",
	"github.com/ory/dockertest",
	"github.com/twmb/franz-go",
	"github.com/prometheus",
	"github.com/gorilla/mux",
	"github.com/rs/zerolog",
	"github.com/sirupsen/logrus",
	"github.com/Shopify/toxiproxy/v2",
}

// allowed are the packages under a Heavy prefix that are light: the
// toxiproxy client, which drives an external toxiproxy server over HTTP
// with the standard library alone.
var allowed = []string{"github.com/Shopify/toxiproxy/v2/client"}

// HeavyModule is the Heavy prefix pkg falls under, "" for none.
func HeavyModule(pkg string) string {
	if slices.Contains(allowed, pkg) {
		return ""
	}
	for _, h := range Heavy {
		if pkg == h || strings.HasPrefix(pkg, h+"/") {
			return h
		}
	}
	return ""
}

// Graph is each package's imports, as go list prints them (a package
// built for a test carries its test's name in brackets).
type Graph struct {
	Roots   []string
	Imports map[string][]string
}

// Load lists pkgs and everything they import, run in dir; with tests, the
// packages' tests and what they import too (go list -deps -test).
func Load(dir string, tests bool, pkgs ...string) (*Graph, error) {
	args := []string{"list", "-e", "-deps", "-f", "{{.ImportPath}}{{range .Imports}}\t{{.}}{{end}}"}
	rootArgs := []string{"list", "-e", "-f", "{{.ImportPath}}"}
	if tests {
		args = append(args, "-test")
		rootArgs = append(rootArgs, "-test")
	}
	out, err := goList(dir, append(args, pkgs...))
	if err != nil {
		return nil, err
	}
	g := &Graph{Imports: map[string][]string{}}
	for line := range strings.Lines(out) {
		f := strings.Split(strings.TrimSpace(line), "\t")
		g.Imports[f[0]] = f[1:]
	}
	roots, err := goList(dir, append(rootArgs, pkgs...))
	if err != nil {
		return nil, err
	}
	g.Roots = strings.Fields(roots)
	return g, nil
}

func goList(dir string, args []string) (string, error) {
	cmd := exec.Command(proc.GoCommand(), args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr.Bytes())
	}
	return string(out), nil
}

// Violation is a heavy module reached from a root, and the shortest chain
// of imports that reaches it.
type Violation struct {
	Module string
	Chain  []string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: %s", v.Module, strings.Join(v.Chain, " -> "))
}

// Heavy lists each heavy module the roots reach, once, by its shortest
// chain (which may pass through another heavy module), in the order of
// Heavy.
func (g *Graph) Heavy() []Violation {
	parent := map[string]string{}
	seen := map[string]bool{}
	first := map[string]string{} // module -> the first package of it reached
	queue := slices.Clone(g.Roots)
	for _, r := range queue {
		seen[r] = true
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if m := HeavyModule(plain(p)); m != "" {
			if _, ok := first[m]; !ok {
				first[m] = p
			}
		}
		for _, q := range g.Imports[p] {
			if !seen[q] {
				seen[q], parent[q] = true, p
				queue = append(queue, q)
			}
		}
	}
	var vs []Violation
	for _, m := range Heavy {
		p, ok := first[m]
		if !ok {
			continue
		}
		chain := []string{plain(p)}
		for q, ok := parent[p]; ok; q, ok = parent[q] {
			chain = append(chain, plain(q))
		}
		slices.Reverse(chain)
		vs = append(vs, Violation{Module: m, Chain: chain})
	}
	return vs
}

// plain is an import path without the test it was built for.
func plain(p string) string {
	p, _, _ = strings.Cut(p, " [")
	return p
}
