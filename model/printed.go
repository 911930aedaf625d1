package model

// A program's step is a value (Op, Outcome) with a printed form
// (FormatStep) that ParseStep reads back. Not every field prints: an op's
// claim ID is the run's own, a fenceless protocol's counts and a token's
// tail are not shown. AsPrinted is the value a step's line holds, so that
// the program a check recorded is the program its printed lines read
// back as: TestPrintedIsWhatParses holds the two to each other.

// AsPrinted is op with only the fields its line shows: what ParseOp
// reads back from op.String().
func (o Op) AsPrinted() Op {
	sh, known := shapes[o.Kind]
	if !known {
		return o
	}
	out := Op{Kind: o.Kind, Part: o.Part}
	if sh.worker {
		out.Worker = o.Worker
	}
	if sh.event || o.Kind == Begin {
		out.Event = o.Event
	}
	if sh.gen {
		switch o.Fence.Kind {
		case ShowToken:
			out.Fence = Fence{Kind: ShowToken, Token: o.Fence.Token}
		case ShowNone:
			out.Fence = Fence{Kind: ShowNone, Nth: o.Fence.Nth}
		default:
			out.Gen = o.Gen
		}
	}
	return out
}

// AsPrinted is o with only the fields its line shows: what ParseOutcome
// reads back from o.String().
func (o Outcome) AsPrinted() Outcome {
	switch o.Kind {
	case Waiting:
		return Outcome{Kind: Waiting, On: o.On}
	case Rewound:
		return Outcome{Kind: Rewound, Lost: o.Lost}
	case Claimed:
	default:
		return Outcome{Kind: o.Kind}
	}
	out := Outcome{Kind: Claimed, Shown: o.Shown}
	var grants []Grant
	for i, g := range o.Grants() {
		if o.Shown != ShowGen {
			g.Gen = 0
		}
		grants = append(grants, g)
		if o.Shown == ShowToken {
			token := "?"
			if i < len(o.Tokens) {
				token = o.Tokens[i]
			}
			out.Tokens = append(out.Tokens, token)
		}
	}
	out.Event, out.Gen = grants[0].Event, grants[0].Gen
	if len(grants) > 1 {
		out.More = grants[1:]
	}
	return out
}
