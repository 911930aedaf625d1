package model

// A protocol whose claim returns no generation may still fence its
// outcomes with one: the suite sends, as @generation, its own count of
// the claims on the row (testdata/correct/jobs_lease.sql). After an
// ambiguous claim commit the possible states count differently, and the
// harness sends the count of the first. Where the claim's count in a
// state is another, the protocol refuses the outcome for a count that
// is not the row's: the harness's guess, not the protocol's failure.

// RejectedForCount is op, an outcome sent with the count op.Gen, refused
// for it, when in s it names a claim whose count there is another; nil
// otherwise.
func (s State) RejectedForCount(op Op) []Transition {
	switch op.Kind {
	case Complete, Retry, Renew:
	default:
		return nil
	}
	if c := s.ClaimOf(op); c.ID == 0 || op.Gen == 0 || c.Gen == op.Gen {
		return nil
	}
	return one(Rejected, s.clone())
}
