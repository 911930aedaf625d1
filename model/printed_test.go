package model

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestPrintedIsWhatParses: a step's line reads back as the step with only
// its printed fields (AsPrinted), for every kind of op and outcome, so
// that a recorded program and its printed lines are one program.
func TestPrintedIsWhatParses(t *testing.T) {
	kinds := make([]Kind, 0, len(shapes))
	for k := range shapes {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	name := func(t *rapid.T, prefix, label string) string {
		return fmt.Sprintf("%s%d", prefix, rapid.IntRange(1, 5).Draw(t, label))
	}
	token := rapid.StringMatching(`[0-9a-f]{1,8}`)
	rapid.Check(t, func(t *rapid.T) {
		op := Op{
			Kind:   rapid.SampledFrom(kinds).Draw(t, "kind"),
			Worker: name(t, "w", "worker"),
			Event:  name(t, "e", "event"),
			Gen:    rapid.Int64Range(0, 9).Draw(t, "gen"),
			Claim:  rapid.IntRange(0, 9).Draw(t, "claim"),
		}
		switch rapid.IntRange(0, 2).Draw(t, "fence") {
		case 1:
			op.Fence = Fence{Kind: ShowToken, Token: token.Draw(t, "token")}
		case 2:
			op.Fence = Fence{Kind: ShowNone, Nth: rapid.IntRange(1, 4).Draw(t, "nth")}
		}
		if op.Kind == Begin && rapid.Bool().Draw(t, "plain begin") {
			op.Event = ""
		}
		if op.Splittable() && rapid.Bool().Draw(t, "split") {
			of := rapid.IntRange(2, 3).Draw(t, "of")
			op.Part = Part{Upto: rapid.IntRange(1, of).Draw(t, "upto"), Of: of}
		}
		out := Outcome{Kind: rapid.SampledFrom([]OutcomeKind{OK, Claimed, Empty, Applied, Rejected, Unknown, Waiting, Rewound}).Draw(t, "outcome")}
		switch out.Kind {
		case Waiting:
			out.On = name(t, "w", "on")
		case Rewound:
			out.Lost = rapid.IntRange(0, 3).Draw(t, "lost")
		case Claimed:
			out.Shown = FenceKind(rapid.IntRange(0, 2).Draw(t, "shown"))
			n := rapid.IntRange(1, 3).Draw(t, "rows")
			for i := range n {
				g := Grant{Event: fmt.Sprintf("e%d", i+1), Gen: rapid.Int64Range(0, 9).Draw(t, "grant gen")}
				if i == 0 {
					out.Event, out.Gen = g.Event, g.Gen
				} else {
					out.More = append(out.More, g)
				}
			}
			if out.Shown == ShowToken {
				for range rapid.IntRange(0, n).Draw(t, "tokens") {
					out.Tokens = append(out.Tokens, token.Draw(t, "row token"))
				}
			}
		}
		line := FormatStep(op, out)
		gotOp, gotOut, err := ParseStep(line)
		if err != nil {
			t.Fatalf("ParseStep(%q): %v", line, err)
		}
		if !reflect.DeepEqual(gotOp, op.AsPrinted()) {
			t.Fatalf("%q reads back as op %#v, AsPrinted is %#v", line, gotOp, op.AsPrinted())
		}
		if !reflect.DeepEqual(gotOut, out.AsPrinted()) {
			t.Fatalf("%q reads back as outcome %#v, AsPrinted is %#v", line, gotOut, out.AsPrinted())
		}
	})
}
