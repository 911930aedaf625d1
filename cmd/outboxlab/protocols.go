package main

import (
	"context"
	"sort"
	"time"

	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
)

// loadAll resolves every protocol argument (the built-ins when none is
// given) before anything runs, so a bad file is reported at once.
func loadAll(args []string) ([]*sut.Protocol, error) {
	if len(args) == 0 {
		args = []string{"leased", "baseline"}
	}
	var out []*sut.Protocol
	for _, a := range args {
		p, err := sut.Resolve(a)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// loadAllWorker is loadAll, or with a worker command, every argument as
// that worker's file.
func loadAllWorker(args []string, worker string) ([]*sut.Protocol, error) {
	if worker == "" {
		return loadAll(args)
	}
	var out []*sut.Protocol
	for _, a := range args {
		p, err := sut.ResolveWorker(a, worker)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// installAll starts (or finds) the topology's server and installs every
// protocol in a schema of its own, checking each with the server before any
// step runs.
func installAll(topo pgserver.Topology, protocols []*sut.Protocol) (*pgserver.Server, []*sut.Instance, error) {
	srv, err := pgserver.SharedTopology(topo)
	if err != nil {
		return nil, nil, err
	}
	var insts []*sut.Instance
	for _, p := range protocols {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		inst, err := sut.Install(ctx, srv.ConnString(), p)
		cancel()
		if err != nil {
			closeAll(insts)
			return nil, nil, err
		}
		insts = append(insts, inst)
	}
	return srv, insts, nil
}

func closeAll(insts []*sut.Instance) {
	for _, inst := range insts {
		inst.Close()
	}
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
