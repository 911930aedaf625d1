package relay

import (
	"fmt"
	"math/rand/v2"
)

// Step kinds. A worker runs its relay loop one stage a Next: claim, then
// publish (and wait for the acknowledgment), then complete (in that order
// unless a variant changes it).
const (
	Next          = "next"           // the worker's next stage
	NextAckLost   = "next_ack_lost"  // the worker's loop up to its publish, whose acknowledgment is lost
	Kill          = "kill"           // SIGKILL the worker
	Pause         = "pause"          // SIGSTOP
	Resume        = "resume"         // SIGCONT
	ExpireLease   = "expire"         // the event's lease ends (fixture)
	Consume       = "consume"        // the consumer reads to the end of the topic
	ConsumeCrash  = "consume_crash"  // the consumer dies after the first step of its first record
	BrokerRestart = "broker_restart" // the broker stops and starts again
)

// Step is one line of a program.
type Step struct {
	Kind   string
	Worker string // Next, NextAckLost, Kill, Pause, Resume
	Event  string // ExpireLease
}

func (s Step) String() string {
	switch {
	case s.Worker != "":
		return fmt.Sprintf("%s.%s", s.Worker, s.Kind)
	case s.Event != "":
		return fmt.Sprintf("%s(%s)", s.Kind, s.Event)
	}
	return s.Kind
}

// Program is a check: its workers and events, then its steps; the drain
// follows every program.
type Program struct {
	Workers []string
	Events  []string
	Steps   []Step
}

// weights of the generator: how often each kind is drawn. Next dominates
// so that pipelines get somewhere; the faults are each drawn often enough
// that a default run reaches every coverage class.
var weights = []struct {
	kind   string
	weight int
	fault  bool // only with faults on
}{
	{Next, 10, false}, {Kill, 4, false}, {Pause, 3, false}, {Resume, 2, false},
	{ExpireLease, 3, false}, {Consume, 2, false}, {ConsumeCrash, 2, false},
	{NextAckLost, 2, true}, {BrokerRestart, 1, true},
}

// Generate draws a program from seed: 2 to maxWorkers workers, 1 to
// maxEvents events, 1 to 2*avgSteps steps.
func Generate(seed uint64, maxWorkers, maxEvents, avgSteps int, faults bool) Program {
	rng := rand.New(rand.NewPCG(seed, 0x6f7574626f78)) // "outbox"
	p := Program{}
	for i := range 2 + rng.IntN(max(maxWorkers-1, 1)) {
		p.Workers = append(p.Workers, fmt.Sprintf("w%d", i+1))
	}
	for i := range 1 + rng.IntN(max(maxEvents, 1)) {
		p.Events = append(p.Events, fmt.Sprintf("e%d", i+1))
	}
	total := 0
	for _, w := range weights {
		if faults || !w.fault {
			total += w.weight
		}
	}
	for range 1 + rng.IntN(max(2*avgSteps, 1)) {
		n := rng.IntN(total)
		for _, w := range weights {
			if !faults && w.fault {
				continue
			}
			if n -= w.weight; n < 0 {
				p.Steps = append(p.Steps, p.draw(rng, w.kind))
				break
			}
		}
	}
	return p
}

// draw makes a step of kind. A worker step goes, two times in three, to the
// worker of the step before: a fault then often lands inside a pipeline
// that is under way (between the ack and the complete), not on an idle
// worker.
func (p Program) draw(rng *rand.Rand, kind string) Step {
	switch kind {
	case Next, NextAckLost, Kill, Pause, Resume:
		if n := len(p.Steps); n > 0 && p.Steps[n-1].Worker != "" && rng.IntN(3) != 0 {
			return Step{Kind: kind, Worker: p.Steps[n-1].Worker}
		}
		return Step{Kind: kind, Worker: p.Workers[rng.IntN(len(p.Workers))]}
	case ExpireLease:
		return Step{Kind: kind, Event: p.Events[rng.IntN(len(p.Events))]}
	}
	return Step{Kind: kind}
}

// Without is the program with step i left out (for shrinking).
func (p Program) Without(i int) Program {
	q := p
	q.Steps = append(append([]Step(nil), p.Steps[:i]...), p.Steps[i+1:]...)
	return q
}

// Smaller are the programs with one worker or one event fewer (the last),
// and the steps that named it left out, for shrinking.
func (p Program) Smaller() []Program {
	var out []Program
	if n := len(p.Workers); n > 1 {
		out = append(out, p.dropping(p.Workers[n-1], ""))
	}
	if n := len(p.Events); n > 1 {
		out = append(out, p.dropping("", p.Events[n-1]))
	}
	return out
}

func (p Program) dropping(worker, event string) Program {
	q := Program{}
	for _, w := range p.Workers {
		if w != worker {
			q.Workers = append(q.Workers, w)
		}
	}
	for _, e := range p.Events {
		if e != event {
			q.Events = append(q.Events, e)
		}
	}
	for _, s := range p.Steps {
		if (worker == "" || s.Worker != worker) && (event == "" || s.Event != event) {
			q.Steps = append(q.Steps, s)
		}
	}
	return q
}
