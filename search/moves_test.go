package search

import (
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/machine"
)

func mustParse(t *testing.T, text string) Program {
	t.Helper()
	p, err := ParseProgram(strings.Split(strings.TrimSpace(text), "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// want compares a candidate with the program text it should be, and
// checks that it is simpler than the program it came from (the shrinker
// keeps only those, so that it ends) and that it reads back as it prints.
func want(t *testing.T, from, got Program, ok bool, text string) {
	t.Helper()
	if !ok {
		t.Fatalf("no candidate, want\n%s", text)
	}
	text = strings.TrimSpace(text)
	if got.String() != text {
		t.Errorf("got\n%s\nwant\n%s", got, text)
	}
	if !simplerThan(got, from) {
		t.Errorf("candidate\n%s\nis not simpler than\n%s", got, from)
	}
	if back := mustParse(t, got.String()); back.String() != got.String() {
		t.Errorf("reads back as\n%s", back)
	}
}

// The program shrinking used to stop at: the violation is about e2, and
// only e1 taken out with every step that names it (w1's Begin, which
// claimed it, and the Rollback that ends that Begin's transaction, here
// in the drain and not part of the program) lets it go further.
const stuck = `
setup: 2 workers (w1 w2), events e1 e2
  1. w1.Begin() -> claimed e1 gen=1
  2. w2.Claim() -> claimed e2 gen=1
     -- drain --
  3. w1.Rollback() -> ok
  4. Expire(e2) -> ok
  5. w1.Claim() -> claimed e1 gen=1
  6. w1.Complete(e1, gen=1) -> applied
  7. w1.Claim() -> empty   // model: claimed e2 gen=2
   ^ violation: w1.Claim() -> empty: claim returned nothing while e2 is claimable (stranded row)
`

func TestWithoutEventStuck(t *testing.T) {
	p := mustParse(t, stuck)
	c, ok := withoutEvent(p, "e1", 1)
	want(t, p, c, ok, `
setup: 2 workers (w1 w2), events e1
  1. w2.Claim() -> claimed e1 gen=1`)
	// w2's steps go with it; the setup keeps its two workers (the
	// machine's minimum), and a swap then names the claimer w1.
	c2, ok := withoutWorker(c, "w2", 2)
	want(t, c, c2, ok, `setup: 2 workers (w1 w2), events e1`)
	if _, ok := withoutWorker(c2, "w2", 2); ok {
		t.Error("a worker with no steps, at the minimum, is no candidate")
	}
	if _, ok := withoutEvent(c, "e1", 1); ok {
		t.Error("the setup's last event taken out")
	}
}

const mixed = `
setup: 3 workers (w1 w2 w3), events e1 e2
  1. w1.Begin() -> claimed e1 gen=1
  2. w3.Claim() -> claimed e2 gen=1
  3. Enqueue(e3) -> ok
  4. w1.Rollback() -> ok
  5. w2.Claim() -> claimed e1 gen=1
  6. w2.Complete(e1, gen=1) -> applied
  7. Expire(e2) -> ok
  8. w3.Retry(e2, gen=1) -> applied
  9. w1.Claim() -> claimed e3 gen=1
`

func TestWithoutEvent(t *testing.T) {
	p := mustParse(t, mixed)
	c, ok := withoutEvent(p, "e1", 1)
	want(t, p, c, ok, `
setup: 3 workers (w1 w2 w3), events e1
  1. w3.Claim() -> claimed e1 gen=1
  2. Enqueue(e2) -> ok
  3. Expire(e1) -> ok
  4. w3.Retry(e1, gen=1) -> applied
  5. w1.Claim() -> claimed e2 gen=1`)
	c, ok = withoutEvent(p, "e3", 1)
	want(t, p, c, ok, `
setup: 3 workers (w1 w2 w3), events e1 e2
  1. w1.Begin() -> claimed e1 gen=1
  2. w3.Claim() -> claimed e2 gen=1
  3. w1.Rollback() -> ok
  4. w2.Claim() -> claimed e1 gen=1
  5. w2.Complete(e1, gen=1) -> applied
  6. Expire(e2) -> ok
  7. w3.Retry(e2, gen=1) -> applied`)
	if _, ok := withoutEvent(p, "e1", 2); ok {
		t.Error("an event of a setup at MinEvents taken out")
	}
	if _, ok := withoutEvent(p, "e4", 1); ok {
		t.Error("an event the program never has taken out")
	}
}

func TestWithoutWorker(t *testing.T) {
	p := mustParse(t, mixed)
	c, ok := withoutWorker(p, "w2", 2)
	want(t, p, c, ok, `
setup: 2 workers (w1 w2), events e1 e2
  1. w1.Begin() -> claimed e1 gen=1
  2. w2.Claim() -> claimed e2 gen=1
  3. Enqueue(e3) -> ok
  4. w1.Rollback() -> ok
  5. Expire(e2) -> ok
  6. w2.Retry(e2, gen=1) -> applied
  7. w1.Claim() -> claimed e3 gen=1`)
	c, ok = withoutWorker(p, "w2", 3)
	want(t, p, c, ok, `
setup: 3 workers (w1 w2 w3), events e1 e2
  1. w1.Begin() -> claimed e1 gen=1
  2. w3.Claim() -> claimed e2 gen=1
  3. Enqueue(e3) -> ok
  4. w1.Rollback() -> ok
  5. Expire(e2) -> ok
  6. w3.Retry(e2, gen=1) -> applied
  7. w1.Claim() -> claimed e3 gen=1`)
}

func TestWithEnqueueInSetup(t *testing.T) {
	p := mustParse(t, mixed)
	c, ok := withEnqueueInSetup(p)
	want(t, p, c, ok, `
setup: 3 workers (w1 w2 w3), events e1 e2 e3
  1. w1.Begin() -> claimed e1 gen=1
  2. w3.Claim() -> claimed e2 gen=1
  3. w1.Rollback() -> ok
  4. w2.Claim() -> claimed e1 gen=1
  5. w2.Complete(e1, gen=1) -> applied
  6. Expire(e2) -> ok
  7. w3.Retry(e2, gen=1) -> applied
  8. w1.Claim() -> claimed e3 gen=1`)
	if p.Events[len(p.Events)-1] != "e2" || len(p.Steps) != 9 {
		t.Errorf("the program the candidate came from changed:\n%s", p)
	}
	if _, ok := withEnqueueInSetup(c); ok {
		t.Error("a program without an Enqueue step")
	}
}

func TestWithoutTransactions(t *testing.T) {
	p := mustParse(t, mixed)
	cs := withoutTransactions(p)
	if len(cs) != 1 {
		t.Fatalf("%d candidates, want the one Begin with its Rollback", len(cs))
	}
	want(t, p, cs[0], true, `
setup: 3 workers (w1 w2 w3), events e1 e2
  1. w3.Claim() -> claimed e2 gen=1
  2. Enqueue(e3) -> ok
  3. w2.Claim() -> claimed e1 gen=1
  4. w2.Complete(e1, gen=1) -> applied
  5. Expire(e2) -> ok
  6. w3.Retry(e2, gen=1) -> applied
  7. w1.Claim() -> claimed e3 gen=1`)
	// A Begin whose transaction a Kill ends, or that stays open into the
	// drain, has no end to go with it.
	open := mustParse(t, `
setup: 2 workers (w1 w2), events e1
  1. w1.Begin() -> claimed e1 gen=1
  2. w1.Kill() -> ok
  3. w2.Begin() -> empty`)
	if cs := withoutTransactions(open); len(cs) != 0 {
		t.Errorf("candidates %v, want none", cs)
	}
}

func TestWithoutClaims(t *testing.T) {
	p := mustParse(t, `
setup: 2 workers (w1 w2), events e1 e2
  1. w2.Claim() -> claimed e1 gen=1
  2. Expire(e1) -> ok
  3. w1.Begin() -> claimed e1 gen=2
  4. w1.Commit() -> ok
  5. w2.Begin() -> claimed e2 gen=1
  6. w2.Rollback() -> ok
  7. Expire(e1) -> ok
  8. w1.Claim() -> claimed e1 gen=3
  9. w1.Complete(e1, gen=2) -> applied`)
	cs := withoutClaims(p)
	if len(cs) != 3 {
		t.Fatalf("%d candidates, want three: the rolled-back claim took no generation", len(cs))
	}
	want(t, p, cs[0], true, `
setup: 2 workers (w1 w2), events e1 e2
  1. Expire(e1) -> ok
  2. w1.Begin() -> claimed e1 gen=1
  3. w1.Commit() -> ok
  4. w2.Begin() -> claimed e2 gen=1
  5. w2.Rollback() -> ok
  6. Expire(e1) -> ok
  7. w1.Claim() -> claimed e1 gen=2
  8. w1.Complete(e1, gen=1) -> applied`)
	want(t, p, cs[1], true, `
setup: 2 workers (w1 w2), events e1 e2
  1. w2.Claim() -> claimed e1 gen=1
  2. Expire(e1) -> ok
  3. w2.Begin() -> claimed e2 gen=1
  4. w2.Rollback() -> ok
  5. Expire(e1) -> ok
  6. w1.Claim() -> claimed e1 gen=2`)
	want(t, p, cs[2], true, `
setup: 2 workers (w1 w2), events e1 e2
  1. w2.Claim() -> claimed e1 gen=1
  2. Expire(e1) -> ok
  3. w1.Begin() -> claimed e1 gen=2
  4. w1.Commit() -> ok
  5. w2.Begin() -> claimed e2 gen=1
  6. w2.Rollback() -> ok
  7. Expire(e1) -> ok
  8. w1.Complete(e1, gen=2) -> applied`)
}

func TestWithExpiresForRetries(t *testing.T) {
	p := mustParse(t, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. w1.Retry(e1, gen=1) -> applied
  3. w2.Retry(e1, gen=1) -> rejected
  4. MakeDue(e1) -> ok
  5. w2.Claim() -> claimed e1 gen=2
  6. w1.Renew(e1, gen=1) -> applied`)
	cs := withExpiresForRetries(p)
	if len(cs) != 2 {
		t.Fatalf("%d candidates, want two (an Expire, and the EndSession of lease=session): a rejected retry left the row as it was", len(cs))
	}
	want(t, p, cs[1], true, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. w1.EndSession() -> ok
  3. w2.Retry(e1, gen=1) -> rejected
  4. w2.Claim() -> claimed e1 gen=2
  5. w1.Renew(e1, gen=1) -> applied`)
	want(t, p, cs[0], true, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. Expire(e1) -> ok
  3. w2.Retry(e1, gen=1) -> rejected
  4. w2.Claim() -> claimed e1 gen=2
  5. w1.Renew(e1, gen=1) -> applied`)
}

func TestWithExpiresForAges(t *testing.T) {
	p := mustParse(t, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. Age(e1) -> ok
  3. Age(e1) -> ok
  4. w1.Retry(e1, gen=1) -> applied`)
	cs := withExpiresForAges(p)
	if len(cs) != 1 {
		t.Fatalf("%d candidates, want one", len(cs))
	}
	want(t, p, cs[0], true, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. Expire(e1) -> ok
  3. w1.Retry(e1, gen=1) -> applied`)
	single := mustParse(t, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. Age(e1) -> ok`)
	if cs := withExpiresForAges(single); len(cs) != 0 {
		t.Errorf("a single Age was replaced: it may be what shows a short lease")
	}
	// A split's first part between the Ages must read the lease live:
	// the expiry where the second Age was too.
	split := mustParse(t, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. Age(e1) -> ok
  3. w1.Retry(e1, gen=1) [1/2] -> ok
  4. Age(e1) -> ok`)
	cs = withExpiresForAges(split)
	if len(cs) != 2 {
		t.Fatalf("%d candidates, want two", len(cs))
	}
	want(t, split, cs[1], true, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. w1.Retry(e1, gen=1) [1/2] -> ok
  3. Expire(e1) -> ok`)
}

// TestFaultsTakenOutOneAtATime: each faulted step gives a candidate
// without its fault, simpler than the program (fewer faults at the same
// length); a failure that needs step 2's lost reply keeps it, and step
// 1's lost request, which it does not need, goes.
func TestFaultsTakenOutOneAtATime(t *testing.T) {
	p := mustParse(t, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> unknown   // request_lost, ambiguous: applied or not, decided by the next read
  2. w2.Claim() -> unknown   // reply_lost, ambiguous: applied or not, decided by the next read
  3. w1.Claim() -> empty`)
	cands := withoutFaults(p)
	if len(cands) != 2 || cands[0].Steps[1].Fault != "" || cands[0].Steps[0].Fault == "" ||
		cands[1].Steps[0].Fault != "" || cands[1].Steps[1].Fault == "" {
		t.Fatalf("candidates:\n%v\nwant step 2's fault out, then step 1's", cands)
	}
	for _, c := range cands {
		if !simplerThan(c, p) || simplerThan(p, c) {
			t.Errorf("candidate\n%s\nis not simpler than\n%s", c, p)
		}
	}
	needsStep2 := func(c Program) bool { return c.Steps[1].Fault == "reply_lost" }
	got, ok := firstFailing(p, cands, needsStep2)
	if !ok || got.Steps[0].Fault != "" || got.Steps[1].Fault != "reply_lost" {
		t.Fatalf("first failing candidate %v (%v), want step 1's lost request out and step 2's lost reply kept", got, ok)
	}
	if _, ok := firstFailing(got, withoutFaults(got), needsStep2); ok {
		t.Errorf("the lost reply the failure needs was taken out")
	}
	if n := len(withoutFaults(mustParse(t, stuck))); n != 0 {
		t.Errorf("%d candidates from a program without faults, want none", n)
	}
}

// TestFaultFree: one candidate takes out every fault at once, a step's and
// a server's; a program without any has none.
func TestFaultFree(t *testing.T) {
	p := mustParse(t, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> unknown   // request_lost, ambiguous: applied or not, decided by the next read
  2. Restart() -> ok
  3. w2.Claim() -> claimed e1 gen=1
  4. w2.Complete(e1, gen=1) -> unknown   // reply_lost, ambiguous: applied or not, decided by the next read
  5. w1.Claim() -> empty`)
	q, ok := faultFree(p)
	if !ok || len(q.Steps) != 4 || faults(q) != 0 || !simplerThan(q, p) {
		t.Fatalf("faultFree:\n%s\nwant the four steps without the restart and without a fault", q)
	}
	for _, s := range q.Steps {
		if s.Op.Kind.ServerFault() {
			t.Errorf("a server fault's step is left: %v", s.Op)
		}
	}
	if _, ok := faultFree(q); ok {
		t.Errorf("a program without faults has a fault-free candidate")
	}
	// Tried again each round, first: after delta debugging a program may
	// need none of the faults it needed before.
	h := Searcher{Harness: &machine.Harness{Cfg: machine.Default()}}
	if c := h.simpler(p); len(c) == 0 || c[0].String() != q.String() {
		t.Errorf("the first of simpler's candidates is not the fault-free program")
	}
	if c := h.simpler(q); len(c) > 0 && c[0].String() == q.String() {
		t.Errorf("a program without faults offered itself")
	}
}

// A program with both kinds of fault offers each kind taken out alone
// after both together; one with a single kind, only the one candidate.
func TestFaultFrees(t *testing.T) {
	both := mustParse(t, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> unknown   // request_lost, ambiguous: applied or not, decided by the next read
  2. Restart() -> ok
  3. w2.Claim() -> claimed e1 gen=1`)
	c := faultFrees(both)
	if len(c) != 3 {
		t.Fatalf("%d candidates, want 3:\n%v", len(c), c)
	}
	if len(c[1].Steps) != 2 || faults(c[1]) != 1 {
		t.Errorf("the second candidate keeps the lost request, not the restart:\n%s", c[1])
	}
	if len(c[2].Steps) != 3 || faults(c[2]) != 0 {
		t.Errorf("the third candidate keeps the restart, not the lost request:\n%s", c[2])
	}
	one := mustParse(t, `
setup: 2 workers (w1 w2), events e1
  1. Restart() -> ok
  2. w2.Claim() -> claimed e1 gen=1`)
	if c := faultFrees(one); len(c) != 1 {
		t.Errorf("%d candidates for a program with one kind of fault, want 1", len(c))
	}
}

// The coarse pass offers each event and each worker taken out whole, and
// runs only on a program that holds a server fault, whose replay is the
// one costly enough to want it.
func TestCoarse(t *testing.T) {
	p := mustParse(t, `
setup: 2 workers (w1 w2), events e1 e2
  1. w1.Claim() -> claimed e1 gen=1
  2. Restart() -> ok
  3. w2.Claim() -> claimed e2 gen=1
  4. w2.Complete(e2, gen=1) -> applied
  5. w1.Complete(e1, gen=1) -> applied`)
	h := Searcher{Harness: &machine.Harness{Cfg: machine.Default()}}
	c := h.coarse(p)
	if len(c) != 4 {
		t.Fatalf("%d candidates, want one per event and per worker (4):\n%v", len(c), c)
	}
	if !holdsServerFault(p) {
		t.Errorf("a program with a restart holds no server fault")
	}
	q, _ := faultFree(p)
	if holdsServerFault(q) {
		t.Errorf("a program without a server fault's step holds one:\n%s", q)
	}
}
