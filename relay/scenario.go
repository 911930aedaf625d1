package relay

// The fixed programs: the article's unwritten test, and the shortest
// sequence that shows each variant's flaw. They run deterministically
// (no draw), so a test asserts what they show on every run.

func steps(s ...Step) []Step { return s }

func next(w string) Step { return Step{Kind: Next, Worker: w} }

// ArticleProgram is the test the article did not write: w1 claims e1,
// publishes it and has the acknowledgment, and is killed before its
// complete; the lease expires, w2 claims e1 again (generation 2) and
// publishes it again under the same event id, which the consumer absorbs.
func ArticleProgram() Program {
	return Program{Workers: []string{"w1", "w2"}, Events: []string{"e1"}, Steps: steps(
		next("w1"), next("w1"), Step{Kind: Kill, Worker: "w1"},
		Step{Kind: ExpireLease, Event: "e1"},
		next("w2"), next("w2"), next("w2"),
		Step{Kind: Consume},
	)}
}

// PausedPublisherProgram is the article's other sequence: w1 claims e1
// and pauses before publishing; the lease expires, w2 claims, publishes and
// completes e1; w1 resumes and publishes generation 1 after generation 2.
// Its complete is rejected; the consumer has the event twice, applies once.
func PausedPublisherProgram() Program {
	return Program{Workers: []string{"w1", "w2"}, Events: []string{"e1"}, Steps: steps(
		next("w1"), Step{Kind: Pause, Worker: "w1"}, Step{Kind: ExpireLease, Event: "e1"},
		next("w2"), next("w2"), next("w2"),
		Step{Kind: Resume, Worker: "w1"}, next("w1"), next("w1"),
		Step{Kind: Consume},
	)}
}

// KillBeforeCompleteProgram kills w1 after its relay loop's second stage:
// after the acknowledgment (correct relay: redelivered later), or after a
// complete that came first (complete_before_publish: the event is lost).
func KillBeforeCompleteProgram() Program {
	return Program{Workers: []string{"w1", "w2"}, Events: []string{"e1"}, Steps: steps(
		next("w1"), next("w1"), Step{Kind: Kill, Worker: "w1"},
	)}
}

// ConsumerCrashProgram relays e1 and crashes the consumer after the first
// step of its record: after the apply (correct: redelivered to the
// consumer and deduplicated), or after an offset commit that came first
// (commit_before_apply: the event is lost).
func ConsumerCrashProgram() Program {
	return Program{Workers: []string{"w1", "w2"}, Events: []string{"e1"}, Steps: steps(
		next("w1"), next("w1"), next("w1"), Step{Kind: ConsumeCrash},
	)}
}

// StrandedProgram kills w1 between its claim and its publish: a protocol
// that never reclaims an expired lease (the baseline) never delivers e1.
func StrandedProgram() Program {
	return Program{Workers: []string{"w1", "w2"}, Events: []string{"e1"}, Steps: steps(
		next("w1"), Step{Kind: Kill, Worker: "w1"},
	)}
}
