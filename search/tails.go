package search

import "slices"

// tails are the candidates made of a program's last 4, 8, 16, ... steps,
// the shortest first, for a program with a rewind (a Crash() or
// Failover()) in it; none for any other.
//
// A counterexample on a topology that forgets is a claim, the rewind that
// loses it, a reclaim and the stale owner's outcome, near the end of a
// found check of a hundred steps. ddmin finds them too, but its chunks
// start at halves, most chunks hold a step the failure needs, and every
// replay that keeps the rewind pays a failover (about a second): leased on
// async-standby, seed 3, still had 18 steps after three minutes of it.
// A tail costs one replay, and the shorter tails that keep the failure are
// found in a handful: its claims then take other rows or generations, but
// the rule is broken the same way (a replay compares with the model, not
// with the recorded outcomes). The other topologies keep the shrinking
// they had: their replays are cheap, and their printed counterexamples
// are pinned in the docs.
func tails(p Program) []Program {
	if !slices.ContainsFunc(p.Steps, func(s Step) bool { return s.Op.Kind.Rewinds() }) {
		return nil
	}
	var out []Program
	for n := 4; n < len(p.Steps); n *= 2 {
		out = append(out, Program{Workers: p.Workers, Events: p.Events, Steps: slices.Clone(p.Steps[len(p.Steps)-n:])})
	}
	return out
}
