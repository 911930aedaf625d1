package machine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/sut"
	"pgregory.net/rapid"
)

// run is one check in progress: the possible model states (more than one
// only while an ambiguous outcome is undecided), the last observed rows
// and the workers' process states.
type run struct {
	h *Harness
	t *rapid.T
	// lastOut is what the last step that ran returned (a replay's
	// rebinding compares it with the program's record).
	lastOut model.Outcome
	states  []model.State
	rows    []sut.StateRow
	ids     map[string]string // event -> its row's id in the state query (the fixtures' @id)
	// claimIDs is the id each claim returned, by the claim's model.Claim.ID:
	// what its worker passes as @id to that claim's complete, retry and
	// renew, as a relay would (it may be a per-claim handle rather than
	// the row's id).
	claimIDs map[int]string
	// claimedIDs are the ids the last claim step returned, by event.
	claimedIDs map[string]string
	// received is what each worker's latest claim of an event returned
	// (its id and token), by worker and event, until the model records
	// the claim (bookClaims): at once for a claim, at the commit for a
	// claim inside a transaction.
	received map[[2]string]receivedClaim
	// clock is when each event's lease was granted (leaseclock.go).
	clock leaseClock
	// replayTokens maps a replayed program's tokens, as its lines show
	// them, to the tokens the replay's own claims returned (show.go).
	replayTokens map[string]string
	rescued      map[string]bool // events a rescue returned to READY, not claimed since
	workers      []string
	dead         map[string]bool
	// procs is what the steps' preconditions read of the worker
	// processes: the harness's pool, or a test's own.
	procs     processes
	nextEvent int
	draining  bool
	// faultPending is set while a network fault is armed, when a timeout
	// is the fault's doing and not a blocked statement.
	faultPending bool
	fault        string // the armed fault's name, for the program line
	// inFlight is the waiting step and the open split section
	// (inflight.go).
	inFlight
	// since is what a rewind may go back to (rewind.go); nil on a server
	// that never loses an acknowledged commit. stalled is set while
	// replication to the standby is stopped (rewind.go).
	since   *rewindLog
	stalled bool
	// tokens are the fencing tokens of a fence=token protocol (tokens.go).
	tokens tokenBook
}

func (r *run) model() model.State { return r.states[0] }

// claimOf is the claim an outcome op is for (model.State.ClaimOf): every
// possible state agrees on a claim's ID, whatever count each gives it.
func (r *run) claimOf(op model.Op) model.Claim { return r.model().ClaimOf(op) }

// withClaim is op with the ID of the claim it is for, as a program read
// from text names it only by its line's fence: a generation, the worker's
// Nth claim of the row, or a token the replay has seen its program's claim
// return (the replay's own claim returned another: replayTokens).
func (r *run) withClaim(op model.Op) model.Op {
	switch op.Kind {
	case model.Complete, model.Retry, model.Renew:
	default:
		return op
	}
	if op.Claim == 0 && op.Fence.Kind == model.ShowToken {
		if full, ok := r.replayTokens[op.Fence.Token]; ok {
			for id, tok := range r.tokens.byClaim {
				if tok == full {
					op.Claim = id
				}
			}
		}
	}
	if c := r.claimOf(op); c.ID > 0 {
		op.Claim, op.Gen = c.ID, c.Gen
	}
	return op
}

// noteReplayTokens maps the tokens a replayed claim step's line showed to
// the ones the replay's claim returned, row by row.
func (r *run) noteReplayTokens(op model.Op, recorded model.Outcome) {
	if recorded.Shown != model.ShowToken {
		return
	}
	if r.replayTokens == nil {
		r.replayTokens = map[string]string{}
	}
	for i, g := range recorded.Grants() {
		if rc, ok := r.received[[2]string{op.Worker, g.Event}]; ok && i < len(recorded.Tokens) {
			r.replayTokens[recorded.Tokens[i]] = rc.token
		}
	}
}

// hasGen reports whether the model predicts the generation: a counter, not
// a token (tokens.go).
func (r *run) hasGen() bool { return r.h.Inst.Statements.HasGen && !r.fenceToken() }

func (r *run) log(line string) {
	r.traceLine(line)
	r.h.mu.Lock()
	r.h.program = append(r.h.program, line)
	r.h.mu.Unlock()
}

// fail records the violation and ends the check. Only the rule goes into
// the failure message, so rapid sees the same message on every replay
// and can shrink.
func (r *run) fail(rule, detail string) {
	r.traceFail(rule, detail)
	r.h.mu.Lock()
	r.h.failure = &Violation{Rule: rule, Detail: detail}
	r.h.program = append(r.h.program, "   ^ violation: "+detail)
	r.h.mu.Unlock()
	r.t.Fatalf("%s", rule)
}

// exec runs one step: op against the real system (do), then the outcome
// against the model, then the persisted rows against the model.
func (r *run) exec(op model.Op, do func() model.Outcome) model.Outcome {
	defer r.traceBegin(op)() // a step of the report's trace, when one is recorded
	r.h.mu.Lock()
	r.h.steps++
	r.h.mu.Unlock()
	for _, s := range r.states {
		if err := s.Precondition(op); err != nil {
			r.t.Fatalf("harness: %v: %v", op, err) // a bug in the action, not the protocol
		}
	}
	if on := r.waitsOn(op); on != "" {
		return r.startWait(op, on)
	}
	r.clock.startStep()
	got := do()
	next, got := r.judge(op, got, fmt.Sprintf("%3d. ", r.stepNumber()))
	r.lastOut = got
	if r.endsWait(op) {
		r.finishWait(op, next)
		return got
	}
	r.observe(op, got, next...)
	return got
}

// judge holds what op returned, got, to the model: the states that allow
// it, with got completed from the model (generations, for a protocol
// without them). It logs the step's line, prefixed, and ends the check
// when no state allows got.
func (r *run) judge(op model.Op, got model.Outcome, prefix string) ([]model.State, model.Outcome) {
	var next []model.State
	var allowed []model.Transition
	var matched []model.Outcome // the model's outcome in each state that allows got
	clockNote := ""             // set when only a lease run out by the clock allows got
	countNote := ""             // set when only a wrong count sent allows got
	if got.Kind == model.Unknown {
		// The harness ends every connection a fault hit (endBackend, a
		// kill): under lease=session that ends the session's leases too.
		for _, s := range r.states {
			next = append(next, s.AmbiguousEnding(op)...)
		}
	} else {
		allow := func(states []model.State) {
			for _, s := range states {
				for _, tr := range s.Step(op) {
					allowed = append(allowed, tr)
					if model.SameOutcome(tr.Out, got, r.hasGen()) {
						next = append(next, tr.Next)
						matched = append(matched, tr.Out)
						// A protocol without generation: the model's count.
						got.Gen, got.More = tr.Out.Gen, tr.Out.More
					}
				}
			}
		}
		allow(r.states)
		if len(next) == 0 && got.Kind == model.Rejected && !r.hasGen() {
			// The count sent for a protocol without generations was the
			// first state's guess (model/count.go).
			for _, s := range r.states {
				for _, tr := range s.RejectedForCount(op) {
					allowed = append(allowed, tr)
					next = append(next, tr.Next)
					matched = append(matched, tr.Out)
				}
			}
			if len(next) > 0 {
				countNote = fmt.Sprintf("     # the count sent, %d, is not the row's in every state the model allows: rejected there", op.Gen)
			}
		}
		if len(next) == 0 {
			if ran, note := r.byClock(r.states); ran != nil {
				kept := allowed
				allowed = nil
				if allow(ran); len(next) > 0 {
					clockNote = note
				} else {
					allowed = kept // explain the failure by what the model held
				}
			}
		}
	}
	if got.Kind == model.Claimed {
		for _, out := range matched {
			r.checkTokens(op, out)
		}
		r.receive(op.Worker, got)
	}
	r.bookClaims(next)
	r.noteGrants(op, got)
	r.traceOutcome(got, allowed)
	line := prefix + r.shownStep(op, got)
	if prefix != thenLine {
		// A waiting step's end, its "then" line, is judged here too; it is
		// not a step of the program (the holder's step ends it again in a
		// replay), as ParseProgram skips its line.
		r.recordStep(r.shownOp(op), r.shownOutcome(got), r.fault)
	}
	if len(next) == 0 {
		r.log(line + "   // model: " + r.outcomes(allowed))
		if !r.hasGen() && got.Kind == model.Claimed {
			got = withModelGens(r.model(), got)
		}
		if r.idNote(op) != "" {
			r.checkOwnRow(op) // a wrong id's real harm: another row changed
		}
		r.checkDead(op)
		err := model.Explain(r.model(), op, got, allowed)
		// The model names the step as it judged it; the line shows the
		// protocol's own fence.
		why := strings.TrimPrefix(fmt.Sprintf("%v", err), model.FormatStep(op, got))
		detail := r.orderDetail(op, got, r.shownStep(op, got)+why) + r.idNote(op)
		r.fail(ruleOf(detail), detail)
	}
	if got.Kind == model.Unknown {
		note := ambiguousNote
		if r.fault != "" {
			note = r.fault + ", " + note
		}
		line += "   // " + note
	}
	r.log(line)
	if clockNote != "" {
		r.logClock(clockNote)
	}
	if countNote != "" {
		r.log(countNote)
	}
	r.countCoverage(op, got)
	return next, got
}

// idNote says, for an outcome sent with an id that is not its row's id in
// the state query, which id it was: the claim's own, which a protocol may
// make a per-claim handle, or which a wrong RETURNING made another row's.
func (r *run) idNote(op model.Op) string {
	switch op.Kind {
	case model.Complete, model.Retry, model.Renew:
	default:
		return ""
	}
	sent := r.claimIDs[r.claimOf(op).ID]
	if row := r.ids[op.Event]; sent != row {
		return fmt.Sprintf(" (it was sent id %s, the id its claim returned; the state query shows %s as id %s)", sent, op.Event, row)
	}
	return ""
}

// checkOwnRow reads the rows after an outcome sent with an id that is not
// its row's and fails the check when another event's row changed: the
// cause to report, ahead of what the outcome looked like to the model.
func (r *run) checkOwnRow(op model.Op) {
	if r.rows == nil {
		return
	}
	if err := model.CheckOwnRow(viewsOf(r.rows), viewsOf(r.readState(op)), op); err != nil {
		r.fail(ruleOf(err.Error()), err.Error()+r.idNote(op))
	}
}

// checkDead reads the rows after a step whose outcome the model did not
// allow and fails the check when a row went DEAD that the model never let
// die: the cause to report, ahead of what the outcome looked like.
func (r *run) checkDead(op model.Op) {
	if r.rows == nil {
		return
	}
	if rule, detail := model.ExplainDead(op, r.model(), viewsOf(r.readState(op))); rule != "" {
		r.fail(rule, detail)
	}
}

// readState runs the protocol's state query on the harness's connection.
// A query that fails on the server, or returns what the suite cannot read
// (a NULL event_id), is the protocol's failure, named; anything else is
// the harness's.
func (r *run) readState(after model.Op) []sut.StateRow {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var rows []sut.StateRow
	var err error
	r.h.timed(func() { rows, err = r.h.Inst.Driver().ReadState(ctx, r.h.Inst.Conn) })
	r.h.mu.Lock()
	r.h.stateReads++
	r.h.mu.Unlock()
	if err != nil && (sut.IsServerError(err) || sut.IsProtocolError(err)) {
		r.fail("state query failed", fmt.Sprintf("after %v the state query failed: %v", after, err))
	}
	if err != nil {
		r.t.Fatalf("harness: read state: %v", err)
	}
	r.traceRead(rows)
	r.checkStateOrder(rows)
	return rows
}

// viewsOf is the persisted view of each row the state query returned.
func viewsOf(rows []sut.StateRow) []model.RowView {
	out := make([]model.RowView, len(rows))
	for i, row := range rows {
		out[i] = row.RowView
	}
	return out
}

// observe reads the persisted rows and keeps the model states that match.
func (r *run) observe(op model.Op, got model.Outcome, next ...model.State) {
	if next == nil {
		next = r.states
	}
	rows := r.readState(op)
	views := viewsOf(rows)
	r.traceStates(next, views)
	tokens := map[string]string{}
	for _, row := range rows {
		r.ids[row.Event] = row.ID
		tokens[row.Event] = row.Token
	}
	r.seeTokens(tokens)
	if err := model.CheckRows(views); err != nil {
		r.fail(ruleOf(err.Error()), err.Error())
	}
	befores := [][]model.RowView{viewsOf(r.rows)}
	if ended := r.inFlight.takeWaitEnded(); ended != nil {
		// The rows before a waiting step's end are its holder's step's,
		// which the harness could not read in between: one guess for each
		// state the model allows after that step, and one must do.
		befores = ended
	}
	if r.rows != nil && !op.Kind.Rewinds() {
		// (A rewind may undo anything since the durable point: a SENT
		// may be READY again.)
		var err error
		for _, before := range befores {
			if err = model.CheckChange(r.model().Policy, before, views, op, got); err == nil {
				break
			}
		}
		if err != nil && r.checkRanOut(befores, views, op, got) {
			// A lease that ran out between the two reads is no step's
			// doing: the clock's (clock.go).
			err = nil
		}
		if err != nil {
			r.fail(ruleOf(err.Error()), err.Error())
		}
	}
	if r.rows != nil {
		r.countRowCoverage(op, r.rows, rows)
	}
	r.rows = rows
	matched := model.Match(next, views, r.hasGen())
	if len(matched) == 0 {
		if ran, note := r.byClock(next); ran != nil {
			if matched = model.Match(ran, views, r.hasGen()); len(matched) > 0 {
				r.logClock(note)
			}
		}
	}
	if len(matched) == 0 {
		detail := "persisted rows differ from the model: " + diff(next[0].View(r.hasGen()), views)
		if rule, why := model.ExplainRows(op, next[0], views); rule != "" {
			r.fail(rule, why+"; "+detail)
		}
		r.fail("persisted rows differ from the model", detail)
	}
	r.states = matched
	r.recordPoint(got)
}

func (r *run) stepNumber() int { return CountSteps(r.h.program) + 1 }

// withModelGens gives a claim of a protocol without a generation the
// model's count of claims on each row, plus one: the generation its
// outcome steps will be sent with.
func withModelGens(s model.State, o model.Outcome) model.Outcome {
	gen := func(e string) int64 {
		if i := rowIndex(s, e); i >= 0 {
			return s.Rows[i].Gen + 1
		}
		return 1
	}
	o.Gen = gen(o.Event)
	o.More = slices.Clone(o.More)
	for i := range o.More {
		o.More[i].Gen = gen(o.More[i].Event)
	}
	return o
}

func (r *run) outcomes(ts []model.Transition) string {
	var out []string
	seen := map[string]bool{}
	for _, t := range ts {
		s := r.shownModel(t.Out).String()
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return strings.Join(out, " | ")
}

// ruleOf is the rule part of a model message: without the leading step
// ("w1.Complete(e1, gen=1) -> applied: ") and the trailing detail in
// parentheses, so that messages repeat exactly across shrinking.
func ruleOf(msg string) string {
	if i := strings.Index(msg, " -> "); i >= 0 {
		if j := strings.Index(msg[i:], ": "); j >= 0 {
			msg = msg[i+j+2:]
		}
	}
	if i := strings.Index(msg, " ("); i > 0 {
		msg = msg[:i]
	}
	return msg
}

func diff(want, got []model.RowView) string {
	find := func(views []model.RowView, e string) (model.RowView, bool) {
		i := slices.IndexFunc(views, func(v model.RowView) bool { return v.Event == e })
		if i < 0 {
			return model.RowView{}, false
		}
		return views[i], true
	}
	for _, w := range want {
		g, ok := find(got, w.Event)
		if !ok {
			return fmt.Sprintf("%s is missing, model has %s", w.Event, rowText(w))
		}
		if d := fieldDiff(w, g); d != "" {
			return d
		}
	}
	for _, g := range got {
		if _, ok := find(want, g.Event); !ok {
			return fmt.Sprintf("%s is %s, model has no such row", g.Event, rowText(g))
		}
	}
	return "rows agree with one model state but not with the step's outcome"
}

// fieldDiff names the first field in which the persisted row g differs
// from the model's w, "" when none does.
func fieldDiff(w, g model.RowView) string {
	switch {
	case w.Status != g.Status:
		return fmt.Sprintf("%s's status is %s, model has %s (%s)", g.Event, g.Status, w.Status, rowText(w))
	case w.HasGen && w.Gen != g.Gen:
		return fmt.Sprintf("%s's generation is %d, model has %d", g.Event, g.Gen, w.Gen)
	case w.LeaseHeld != g.LeaseHeld:
		return fmt.Sprintf("%s's lease_expired is %s, model has %s", g.Event, nullness(g.LeaseHeld), nullness(w.LeaseHeld))
	case w.Status == model.InProgress && w.LeaseExpired != g.LeaseExpired:
		return fmt.Sprintf("%s's lease is %s, model has it %s", g.Event, liveness(g.LeaseExpired), liveness(w.LeaseExpired))
	case w.Status == model.Ready && w.Due != g.Due:
		return fmt.Sprintf("%s is %s, model has it %s", g.Event, dueness(g.Due), dueness(w.Due))
	}
	return ""
}

func nullness(held bool) string {
	if held {
		return "not NULL"
	}
	return "NULL"
}

func liveness(expired bool) string {
	if expired {
		return "expired"
	}
	return "live"
}

func dueness(due bool) string {
	if due {
		return "due"
	}
	return "waiting (not due)"
}

// checkStateOrder holds the state section to the format's promise that it
// returns rows in enqueue order: a read that does not is the file's error,
// named as such, before any comparison with the model could blame the
// protocol for it.
func (r *run) checkStateOrder(rows []sut.StateRow) {
	order := map[string]int{}
	for i, row := range r.model().Rows {
		order[row.Event] = i
	}
	last, lastEvent := -1, ""
	for _, row := range rows {
		i, ok := order[row.Event]
		if !ok {
			continue
		}
		if i < last {
			where := r.h.Inst.Proto.File
			if sec := r.h.Inst.Proto.Sections[sut.State]; sec != nil && sec.Line > 0 {
				where = fmt.Sprintf("%s:%d", where, sec.Line)
			}
			r.fail("state section out of enqueue order", fmt.Sprintf("%s: the state section returned %s before %s, which was enqueued first: "+
				"a state query returns its rows in enqueue order (ORDER BY the id column): the file's error, not the protocol's", where, lastEvent, row.Event))
		}
		last, lastEvent = i, row.Event
	}
}

func rowText(v model.RowView) string {
	s := string(v.Status)
	if v.HasGen {
		s += fmt.Sprintf(" gen=%d", v.Gen)
	}
	switch v.Status {
	case model.InProgress:
		if v.LeaseExpired {
			s += " lease expired"
		} else {
			s += " lease live"
		}
	case model.Ready:
		if !v.Due {
			s += " waiting"
		}
	}
	return s
}
