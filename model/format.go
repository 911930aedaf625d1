package model

import (
	"fmt"
	"strconv"
	"strings"
)

// shape says which of an op's fields its kind uses.
type shape struct{ worker, event, gen bool }

var shapes = map[Kind]shape{
	Enqueue:    {event: true},
	ClaimOp:    {worker: true},
	Begin:      {worker: true},
	Commit:     {worker: true},
	Rollback:   {worker: true},
	Complete:   {worker: true, event: true, gen: true},
	Retry:      {worker: true, event: true, gen: true},
	Renew:      {worker: true, event: true, gen: true},
	Expire:     {event: true},
	MakeDue:    {event: true},
	Age:        {event: true},
	Pause:      {worker: true},
	Resume:     {worker: true},
	Kill:       {worker: true},
	Respawn:    {worker: true},
	EndSession: {worker: true},
	Restart:    {},
	Flush:      {},
	Stall:      {},
	Crash:      {},
	Failover:   {},
	Rescue:     {},
}

// String is the op as one line of a program: w2.Complete(e1, gen=1),
// Enqueue(e1), Restart().
func (o Op) String() string {
	sh, ok := shapes[o.Kind]
	if !ok {
		return fmt.Sprintf("%s.%s(%s, gen=%d)", o.Worker, o.Kind, o.Event, o.Gen)
	}
	var b strings.Builder
	if sh.worker {
		b.WriteString(o.Worker + ".")
	}
	b.WriteString(string(o.Kind) + "(")
	if sh.event {
		b.WriteString(o.Event)
	}
	if o.Kind == Begin && o.Event != "" {
		b.WriteString(expirePrefix + o.Event) // expiring.go
	}
	if sh.gen {
		b.WriteString(o.Fence.suffix(o.Gen))
	}
	b.WriteString(")")
	if o.Part.Of > 0 {
		b.WriteString(" " + o.Part.String())
	}
	return b.String()
}

// String is the outcome as the tail of a program line: ok, empty,
// claimed e1 gen=1, applied, rejected, unknown.
// A batch claim lists every row: claimed e1 gen=1, e3 gen=2.
func (o Outcome) String() string {
	if o.Kind == Claimed {
		var parts []string
		for i, g := range o.Grants() {
			parts = append(parts, g.Event+o.grantFence(i, g.Gen))
		}
		return "claimed " + strings.Join(parts, ", ")
	}
	if o.Kind == Waiting {
		return "waiting on " + o.On
	}
	if o.Kind == Rewound {
		if o.Lost == 1 {
			return "rewound 1 acknowledged commit"
		}
		return fmt.Sprintf("rewound %d acknowledged commits", o.Lost)
	}
	return string(o.Kind)
}

// FormatStep is one line of a program: w2.Complete(e1, gen=1) -> rejected.
// ParseStep reads it back.
func FormatStep(op Op, out Outcome) string {
	return op.String() + " -> " + out.String()
}

// ParseStep reads a line written by FormatStep.
func ParseStep(line string) (Op, Outcome, error) {
	left, right, ok := strings.Cut(strings.TrimSpace(line), " -> ")
	if !ok {
		return Op{}, Outcome{}, fmt.Errorf("parse step %q: want OP -> OUTCOME", line)
	}
	op, err := ParseOp(left)
	if err != nil {
		return Op{}, Outcome{}, err
	}
	out, err := ParseOutcome(right)
	if err != nil {
		return Op{}, Outcome{}, err
	}
	return op, out, nil
}

// ParseOp reads an op written by Op.String.
func ParseOp(text string) (Op, error) {
	text = strings.TrimSpace(text)
	whole, part, err := cutPart(text)
	if err != nil {
		return Op{}, err
	}
	op, err := parseWholeOp(whole)
	if err != nil || part.Of == 0 {
		return op, err
	}
	op.Part = part
	if !op.Splittable() {
		return Op{}, fmt.Errorf("parse op %q: a %s step cannot be split", text, op.Kind)
	}
	return op, nil
}

// parseWholeOp reads an op without a part mark.
func parseWholeOp(text string) (Op, error) {
	head, args, ok := strings.Cut(text, "(")
	if !ok || !strings.HasSuffix(args, ")") {
		return Op{}, fmt.Errorf("parse op %q: want [WORKER.]KIND(ARGS)", text)
	}
	args = strings.TrimSuffix(args, ")")
	var op Op
	if worker, kind, dotted := strings.Cut(head, "."); dotted {
		op.Worker, op.Kind = worker, Kind(kind)
	} else {
		op.Kind = Kind(head)
	}
	sh, known := shapes[op.Kind]
	if !known {
		return Op{}, fmt.Errorf("parse op %q: unknown kind %q", text, op.Kind)
	}
	if sh.gen {
		event, fence, err := parseFence(args)
		if err != nil {
			return Op{}, fmt.Errorf("parse op %q: want %s(EVENT, gen=N), %s(EVENT, token=T) or %s(EVENT, claim=K): %v", text, op.Kind, op.Kind, op.Kind, err)
		}
		op.Event, op.Gen, op.Fence = event, fence.gen, fence.Fence
	} else if sh.event {
		op.Event = args
	} else if e, ok := strings.CutPrefix(args, expirePrefix); ok && op.Kind == Begin {
		op.Event = e
	}
	if op.String() != text || (sh.worker && op.Worker == "") || (sh.event && op.Event == "") {
		return Op{}, fmt.Errorf("parse op %q: not a well-formed %s op", text, op.Kind)
	}
	return op, nil
}

// ParseOutcome reads an outcome written by Outcome.String.
func ParseOutcome(text string) (Outcome, error) {
	text = strings.TrimSpace(text)
	switch kind := OutcomeKind(text); kind {
	case OK, Empty, Applied, Rejected, Unknown:
		return Outcome{Kind: kind}, nil
	}
	if on, ok := strings.CutPrefix(text, string(Waiting)+" on "); ok && on != "" && !strings.Contains(on, " ") {
		return Outcome{Kind: Waiting, On: on}, nil
	}
	if rest, ok := strings.CutPrefix(text, string(Rewound)+" "); ok {
		n, _, _ := strings.Cut(rest, " ")
		if lost, err := strconv.Atoi(n); err == nil && lost >= 0 {
			if out := (Outcome{Kind: Rewound, Lost: lost}); out.String() == text {
				return out, nil
			}
		}
	}
	if rest, ok := strings.CutPrefix(text, string(Claimed)+" "); ok {
		if out, ok := parseGrants(rest); ok && out.String() == text {
			return out, nil
		}
	}
	return Outcome{}, fmt.Errorf("parse outcome %q: want ok, empty, claimed EVENT gen=N[, EVENT gen=N...], applied, rejected, unknown, waiting on WORKER or rewound N acknowledged commits", text)
}

// parseGrants reads "e1 gen=1, e3 gen=2" (or "e1, e3", or "e1 token=T1,
// e3 token=T2") as a claim's outcome.
func parseGrants(text string) (Outcome, bool) {
	var grants []Grant
	out := Outcome{Kind: Claimed}
	for i, part := range strings.Split(text, ", ") {
		f := strings.Fields(part)
		shown := ShowNone
		var gen int64
		switch {
		case len(f) == 1:
		case len(f) == 2 && strings.HasPrefix(f[1], "gen="):
			n, err := strconv.ParseInt(strings.TrimPrefix(f[1], "gen="), 10, 64)
			if err != nil {
				return Outcome{}, false
			}
			shown, gen = ShowGen, n
		case len(f) == 2 && strings.HasPrefix(f[1], "token=") && len(f[1]) > len("token="):
			shown = ShowToken
			out.Tokens = append(out.Tokens, strings.TrimPrefix(f[1], "token="))
		default:
			return Outcome{}, false
		}
		if i > 0 && shown != out.Shown {
			return Outcome{}, false
		}
		out.Shown = shown
		grants = append(grants, Grant{Event: f[0], Gen: gen})
	}
	out.Event, out.Gen = grants[0].Event, grants[0].Gen
	if len(grants) > 1 {
		out.More = grants[1:]
	}
	return out, true
}
