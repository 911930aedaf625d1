// Package machine is the rapid state machine: it drives real worker
// processes through a protocol's statements, interleaving claims, open
// transactions, pauses, kills, lease expiry and stale outcomes, and after
// every step compares what the workers saw and what the table holds with
// the model. properties_test.go and `outboxlab check` both run it.
package machine

import (
	"time"

	"github.com/outboxlab/outboxlab/model"
)

// Config is everything a run varies: CI and nightly differ here, not in code.
type Config struct {
	MinWorkers, MaxWorkers int // worker processes in one check
	MinEvents, MaxEvents   int // events at the start / at most via enqueue
	// Actions restricts the machine to these actions (nil: all). Tests use
	// it to find each failure class of a protocol on its own.
	Actions []string
	// Faults enables the network and server faults (see faults/); they
	// run only on a harness given an injector (Harness.AttachFaults).
	Faults bool
	// OpTimeout bounds every statement. A statement the server shows
	// waiting on a lock is reported as blocked at once; one that is only
	// slow, after this long.
	OpTimeout time.Duration
	// Weights makes some actions likelier than others: an action of
	// weight w is drawn w times as often as one of weight 1 (the default).
	// They are tuned so that the default budget reaches every coverage
	// class on every seed (see DefaultWeights).
	Weights map[string]int
	// Relax lists the properties this run does not hold the protocol to
	// (a profile's later searches; see model.Property). With
	// claims_never_wait relaxed no claim transaction is left open, so no
	// claim can wait behind one.
	Relax model.Property
	// Strict holds the protocol to the strict policy even when it declares
	// policy=lenient: a profile reports strict_expiry for every protocol,
	// and a lenient one then shows what it allows.
	Strict bool
	// NoWaitingSteps skips every complete, retry or renew that would wait
	// on another worker's open claim transaction, as the machine did
	// before waiting steps (see wait.go): what the evidence compares with.
	NoWaitingSteps bool
	// NoSplitSteps runs every multi-statement section whole, as the machine
	// did before split steps (split.go): what the evidence compares with.
	NoSplitSteps bool
}

// Default is the CI configuration.
func Default() Config {
	return Config{MinWorkers: 2, MaxWorkers: 4, MinEvents: 1, MaxEvents: 4, Faults: true, OpTimeout: 2 * time.Second, Weights: DefaultWeights()}
}

// DefaultWeights favours the actions whose coverage classes need a chain
// of earlier steps (a stale outcome needs a claim and then an expiry or a
// reclaim; renew_aged a claim, an age and a renew), so that 100 checks
// reach every class whatever the seed. Every other action has weight 1.
func DefaultWeights() map[string]int {
	return map[string]int{
		ActClaim:         2,
		ActStaleComplete: 2,
		ActStaleRetry:    2,
		ActRenew:         2,
		// It skips unless its state is there, so its weight costs little
		// elsewhere and makes the race likely once it is.
		ActRace: 4,
		// Like race, it skips without a claim to split, and once a split
		// is open it steps it towards its race.
		ActSplit: 3,
		// It skips unless a rewind lost a claim whose generation was
		// reissued since.
		ActReissued: 4,
	}
}

// weight is how many entries an action gets in rapid's action table.
func (c Config) weight(action string) int { return max(c.Weights[action], 1) }

// Action names, as rapid prints them in a shrunk program.
const (
	ActEnqueue       = "enqueue"
	ActClaim         = "claim"
	ActBegin         = "begin"
	ActCommit        = "commit"
	ActRollback      = "rollback"
	ActComplete      = "complete"
	ActRetry         = "retry"
	ActRenew         = "renew"
	ActStaleComplete = "stale_complete"
	ActStaleRetry    = "stale_retry"
	ActStaleRenew    = "stale_renew"
	ActPause         = "pause"
	ActResume        = "resume"
	ActKill          = "kill"
	ActRespawn       = "respawn"
	// ActEndSession ends a worker's session while its process lives on
	// (session.go). Drawn only under lease=session, where it is what ends
	// a lease.
	ActEndSession  = "end_session"
	ActExpire      = "expire"
	ActMakeDue     = "make_due"
	ActAge         = "age"
	ActRequestLost = "request_lost"
	ActReplyLost   = "reply_lost"
	ActDBRestart   = "db_restart"
	// ActDBDurable moves the durable point of a topology that rewinds
	// (rewind.go): Flush() under async-commit, Stall() under
	// async-standby. Drawn only there.
	ActDBDurable = "db_durable"
	// ActReissued sends a lost claim's outcome once its generation is
	// another claim's (rewind.go). Drawn only where rewinds happen.
	ActReissued = "reissued"
	ActRescue   = "rescue"
	// ActRace takes the next step of a waiting step's race (wait.go): a
	// stale complete, retry or renew that waits behind a reclaim's open
	// transaction, or that reclaim. The stale_* actions and begin may take
	// them too, but the state they need is rare enough to deserve its own.
	ActRace = "race"
	// ActSplit runs a multi-statement complete, retry or renew in two
	// parts with other steps at the statement boundary between (split.go).
	// Only a protocol with such a section has it.
	ActSplit = "split"
)

// FaultActions are enabled only with Config.Faults.
var FaultActions = []string{ActRequestLost, ActReplyLost, ActDBRestart, ActDBDurable}

func (c Config) enabled(action string) bool {
	if c.Relax&model.NoWait != 0 && (action == ActBegin || action == ActRace) {
		return false
	}
	if c.Actions == nil {
		for _, f := range FaultActions {
			if f == action {
				return c.Faults
			}
		}
		return true
	}
	for _, a := range c.Actions {
		if a == action {
			return true
		}
	}
	return false
}
