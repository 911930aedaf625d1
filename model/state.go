package model

import (
	"fmt"
	"slices"
	"strings"
)

// PendingClaim is an open claim transaction: Begin claimed Event at Gen
// (and, with batch, the rows in More) inside it, and nothing is committed
// until Commit. Event is "" (and Gen 0) when the claim found nothing. Bury
// lists the exhausted rows the claim made DEAD in the same transaction.
// Expire is the row whose lease the transaction expired before its claim
// (Begin(expire e)), or "": until Commit, others see that lease live.
type PendingClaim struct {
	Worker string
	Event  string
	Gen    int64
	More   []Grant
	Bury   []string
	Expire string
}

// grants are every row the open claim took, in enqueue order.
func (p PendingClaim) grants() []Grant {
	if p.Event == "" {
		return nil
	}
	return append([]Grant{{p.Event, p.Gen}}, p.More...)
}

// State is everything the policy depends on. It is a value: Step and
// Ambiguous never change their receiver, and the states they return share
// no slice with it.
type State struct {
	Policy  Policy
	Rows    []Row          // enqueue order
	Pending []PendingClaim // open claim transactions, at most one per worker, sorted by worker
	Claims  []Claim        // every claim a worker received (autocommit or committed), in order
	// Lost are the claims a rewind took away (rewind.go): their owners
	// are stale for good, even when a later claim reissues their
	// generation.
	Lost []Claim
}

// New is the empty outbox of a version-1 protocol that promises order.
func New(order Order) State {
	return State{Policy: Policy{Order: order}}
}

// NewWith is the empty outbox of a protocol with the policy p.
func NewWith(p Policy) State {
	return State{Policy: p}
}

// clone copies every slice, so the copy can be written freely.
func (s State) clone() State {
	next := State{
		Policy:  s.Policy,
		Rows:    slices.Clone(s.Rows),
		Pending: slices.Clone(s.Pending),
		Claims:  slices.Clone(s.Claims),
		Lost:    slices.Clone(s.Lost),
	}
	for i, p := range next.Pending {
		next.Pending[i].More, next.Pending[i].Bury = slices.Clone(p.More), slices.Clone(p.Bury)
	}
	return next
}

// row returns the index of event's row, or -1.
func (s State) row(event string) int {
	return slices.IndexFunc(s.Rows, func(r Row) bool { return r.Event == event })
}

// pending returns the index of worker's open claim transaction, or -1.
func (s State) pending(worker string) int {
	return slices.IndexFunc(s.Pending, func(p PendingClaim) bool { return p.Worker == worker })
}

// eligible reports whether a claim may take r: due READY work or (with
// expired) an expired INPROGRESS claim, no open transaction holds it (SKIP
// LOCKED), and its attempt budget is not spent.
func (s State) eligible(r Row, expired bool) bool {
	if r.LockedBy != "" || s.exhausted(r) {
		return false
	}
	return (r.Status == Ready && r.Due) || (expired && r.Status == InProgress && !r.LeaseLive)
}

// loose reports whether a claim may also take r because a property is
// relaxed: a waiting row (backoff), a live lease (one_live_owner), a SENT
// or DEAD row (terminal). Such rows are allowed, never required: they
// widen the claim's choices (see claim), not the rows it must consider.
func (s State) loose(r Row) bool {
	p := s.Policy
	if r.LockedBy != "" || s.exhausted(r) && !p.relaxed(AttemptBudget) {
		return false
	}
	switch {
	case r.Status == Ready && r.Due, r.Status == InProgress && !r.LeaseLive:
		return true
	case r.Status == Ready:
		return p.relaxed(Backoff)
	case r.Status == InProgress:
		return p.relaxed(OneLiveOwner) && r.LeaseLive
	}
	return p.relaxed(Terminal)
}

// exhausted reports whether r has had every attempt its declared budget
// allows. With the budget relaxed such a row may still be claimed, and
// DEAD may come at any attempt (see loose, applied, claim and rescue).
func (s State) exhausted(r Row) bool {
	return s.Policy.MaxAttempts > 0 && r.Gen >= int64(s.Policy.MaxAttempts)
}

// eligibleRows returns the indexes of the rows a claim may take, in enqueue
// order: with expired, expired leases too.
func (s State) eligibleRows(expired bool) []int {
	var out []int
	for i, r := range s.Rows {
		if s.eligible(r, expired) {
			out = append(out, i)
		}
	}
	return out
}

// Eligible returns the events a claim may take now, in enqueue order,
// expired leases included (a protocol with a rescue section may leave
// those to the rescue).
func (s State) Eligible() []string {
	return s.events(s.eligibleRows(true))
}

func (s State) events(rows []int) []string {
	var out []string
	for _, i := range rows {
		out = append(out, s.Rows[i].Event)
	}
	return out
}

// IsCurrent reports whether c is the row's latest claim and its lease is
// live: the only claim whose complete, retry or renew may apply.
func (s State) IsCurrent(c Claim) bool {
	i := s.row(c.Event)
	if i < 0 {
		return false
	}
	r := s.Rows[i]
	return r.Status == InProgress && s.owns(c, r) && r.LeaseLive
}

// owns reports whether c is the claim that holds r's current generation.
func (s State) owns(c Claim, r Row) bool {
	return c.ID > 0 && r.Owner == c.ID && c.Event == r.Event
}

// lastClaimOf is the ID of the latest claim received of r's event at its
// generation, 0 when there is none.
func (s State) lastClaimOf(r Row) int {
	for i := len(s.Claims) - 1; i >= 0; i-- {
		if c := s.Claims[i]; c.Event == r.Event && c.Gen == r.Gen {
			return c.ID
		}
	}
	return 0
}

// ClaimOf is the claim op (a complete, retry or renew) is for: the one its
// Claim names; without one, as its line named it (op.Fence): the worker's
// Nth claim of the event, or the latest it received of the event at the
// generation, or (a token the model does not know) of the event. A claim
// the worker never received has ID 0, and owns no row.
func (s State) ClaimOf(op Op) Claim {
	if op.Claim > 0 && op.Claim <= len(s.Claims) {
		if c := s.Claims[op.Claim-1]; c.Worker == op.Worker && c.Event == op.Event {
			return c
		}
	}
	want := Claim{Worker: op.Worker, Event: op.Event, Gen: op.Gen}
	match := want.Same
	switch op.Fence.Kind {
	case ShowNone:
		n := 0
		for _, c := range s.Claims {
			if c.Worker == op.Worker && c.Event == op.Event {
				if n++; n == op.Fence.Nth {
					return c
				}
			}
		}
		return want
	case ShowToken:
		match = func(c Claim) bool { return c.Worker == op.Worker && c.Event == op.Event }
	}
	for i := len(s.Claims) - 1; i >= 0; i-- {
		if match(s.Claims[i]) {
			return s.Claims[i]
		}
	}
	return want
}

// View is the committed state as the protocol's state query would return
// it: open transactions are invisible to other connections. Without a
// generation, Gen is 0 and is not compared.
func (s State) View(hasGen bool) []RowView {
	out := make([]RowView, 0, len(s.Rows))
	for _, r := range s.Rows {
		v := RowView{
			Event:        r.Event,
			Status:       r.Status,
			HasGen:       hasGen,
			LeaseHeld:    r.Status == InProgress,
			LeaseExpired: r.Status == InProgress && !r.LeaseLive,
			Due:          r.Status == Ready && r.Due,
		}
		if hasGen {
			v.Gen = r.Gen
		}
		out = append(out, v)
	}
	return out
}

// Key is a canonical text of the state: two states with the same Key are
// the same state, so a set of possible states is de-duplicated by it.
// Row.Renewed is left out: it changes no outcome, only which grant a
// failure message blames.
func (s State) Key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s rows=[", s.Policy)
	for i, r := range s.Rows {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s:%s/%d", r.Event, r.Status, r.Gen)
		if r.Status == InProgress && r.Owner != s.lastClaimOf(r) {
			// Usually the row's latest claim at its generation owns it;
			// otherwise (a claim nobody received, a rewind's reissue)
			// the owner tells two states apart.
			fmt.Fprintf(&b, "/owner=%d", r.Owner)
		}
		if r.Status == InProgress && r.LeaseLive {
			b.WriteString("/live")
			if r.Aged {
				b.WriteString("/aged")
			}
			if r.Holder != "" {
				fmt.Fprintf(&b, "/held=%s", r.Holder)
			}
			if r.Rescheduled {
				b.WriteString("/rescheduled")
			}
		}
		if r.Status == Ready && r.Due {
			b.WriteString("/due")
		}
		if r.LockedBy != "" {
			fmt.Fprintf(&b, "/lock=%s", r.LockedBy)
		}
		if r.ReadBy != "" {
			fmt.Fprintf(&b, "/read=%s", r.ReadBy)
			fmt.Fprintf(&b, "/as=%d", r.ReadAs)
		}
	}
	b.WriteString("] pending=[")
	for i, p := range s.Pending {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s:%s/%d", p.Worker, p.Event, p.Gen)
		for _, g := range p.More {
			fmt.Fprintf(&b, "+%s/%d", g.Event, g.Gen)
		}
		for _, e := range p.Bury {
			fmt.Fprintf(&b, "+dead:%s", e)
		}
		if p.Expire != "" {
			fmt.Fprintf(&b, "+expired:%s", p.Expire)
		}
	}
	b.WriteString("] claims=[")
	for i, c := range s.Claims {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s:%s/%d", c.Worker, c.Event, c.Gen)
	}
	b.WriteString("]")
	if len(s.Lost) > 0 {
		b.WriteString(" lost=[")
		for i, c := range s.Lost {
			if i > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%s:%s/%d", c.Worker, c.Event, c.Gen)
		}
		b.WriteString("]")
	}
	return b.String()
}

// Match returns the states, de-duplicated by Key, whose committed view is
// what the state query observed. Gen is compared only when hasGen,
// LeaseExpired only for INPROGRESS rows and Due only for READY rows.
func Match(states []State, observed []RowView, hasGen bool) []State {
	var out []State
	seen := map[string]bool{}
	for _, s := range states {
		if !sameViews(s.View(hasGen), observed, hasGen, s.Policy) {
			continue
		}
		k := s.Key()
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, s)
	}
	return out
}

func sameViews(a, b []RowView, hasGen bool, p Policy) bool {
	return slices.EqualFunc(a, b, func(x, y RowView) bool {
		return sameView(x, y, hasGen) || readsAsReady(x, y, p) || readsAsHeld(x, y, hasGen, p)
	})
}

// sameView compares what the policy pins down about one row.
func sameView(a, b RowView, hasGen bool) bool {
	switch {
	case a.Event != b.Event, a.Status != b.Status, a.LeaseHeld != b.LeaseHeld:
		return false
	case hasGen && a.Gen != b.Gen:
		return false
	case a.Status == InProgress && a.LeaseExpired != b.LeaseExpired:
		return false
	case a.Status == Ready && a.Due != b.Due:
		return false
	}
	return true
}

// Dedup keeps the first state of each Key.
func Dedup(states []State) []State {
	var out []State
	seen := map[string]bool{}
	for _, s := range states {
		if k := s.Key(); !seen[k] {
			seen[k] = true
			out = append(out, s)
		}
	}
	return out
}
