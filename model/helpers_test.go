package model

import (
	"slices"
	"strings"
	"testing"
)

// play runs a program of FormatStep lines from an empty outbox, taking at
// each step the transition whose outcome the line names.
func play(t *testing.T, order Order, program ...string) State {
	t.Helper()
	return playFrom(t, New(order), program...)
}

func playFrom(t *testing.T, s State, program ...string) State {
	t.Helper()
	for _, line := range program {
		op, out, err := ParseStep(line)
		if err != nil {
			t.Fatal(err)
		}
		ts := s.Step(op)
		i := slices.IndexFunc(ts, func(tr Transition) bool { return tr.Out.Equal(out) })
		if i < 0 {
			t.Fatalf("%s: the model allows %s", line, wants(ts))
		}
		s = ts[i].Next
	}
	return s
}

// mustOp parses an op or fails the test.
func mustOp(t *testing.T, text string) Op {
	t.Helper()
	op, err := ParseOp(text)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// outcomes lists the transitions' outcomes as text.
func outcomes(ts []Transition) []string {
	var out []string
	for _, tr := range ts {
		out = append(out, tr.Out.String())
	}
	return out
}

// rows is the committed view as text: "e1 INPROGRESS gen=1 live, e2 READY gen=0 due".
func rows(s State) string {
	var out []string
	for _, v := range s.View(true) {
		out = append(out, v.Event+" "+viewText(v, true))
	}
	return strings.Join(out, ", ")
}

// keys lists the states' keys.
func keys(states []State) []string {
	var out []string
	for _, s := range states {
		out = append(out, s.Key())
	}
	return out
}
