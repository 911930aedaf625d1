package main

import (
	"flag"
	"strings"

	"github.com/outboxlab/outboxlab/pgserver"
)

// topologyFlag is --topology NAME: where the protocols' server runs
// (pgserver.Topologies). An unknown name is a flag error, exit status 2,
// naming the known ones.
type topologyFlag struct{ pgserver.Topology }

func (f *topologyFlag) String() string { return string(f.Topology) }

func (f *topologyFlag) Set(s string) error {
	t, err := pgserver.ParseTopology(s)
	if err != nil {
		return err
	}
	f.Topology = t
	return nil
}

// addTopologyFlag registers f as --topology, single by default.
func addTopologyFlag(fs *flag.FlagSet, f *topologyFlag) {
	f.Topology = pgserver.Single
	names := make([]string, len(pgserver.Topologies))
	for i, t := range pgserver.Topologies {
		names[i] = string(t)
	}
	fs.Var(f, "topology", "`NAME` of the deployment the protocols run on: "+strings.Join(names, ", ")+
		"; every one but single is built from local server binaries (docs/server.md)")
}

// rerun is the flag a re-run command line needs for the topology: none for
// single.
func (f topologyFlag) rerun() string {
	if f.Topology == "" || f.Topology == pgserver.Single {
		return ""
	}
	return " --topology " + string(f.Topology)
}
