package machine

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/sut"
)

// Coverage classes: what a run must have exercised to prove anything.
const (
	CovClaim                 = "claim"
	CovReclaim               = "reclaim"
	CovComplete              = "complete"
	CovStaleCompleteRejected = "stale_complete_rejected"
	CovRetry                 = "retry"
	CovStaleRetryRejected    = "stale_retry_rejected"
	CovRenew                 = "renew"
	CovAge                   = "age"
	CovRenewAged             = "renew_aged"
	CovExpire                = "expire"
	CovPause                 = "pause"
	CovKill                  = "kill"
	CovOpenTxSkip            = "open_tx_skip"
	CovRequestLost           = "request_lost"
	CovReplyLost             = "reply_lost"
	CovDBRestart             = "db_restart"
	// CovRewind: a Crash or Failover lost an acknowledged commit (a
	// topology that rewinds). Counted, never required.
	CovRewind = "rewind"
	// CovStuckCommit: under sync-standby a worker's commit waited on the
	// stalled standby when the primary failed over (stuckcommit.go).
	// Counted, never required.
	CovStuckCommit = "stuck_commit"
	// Version 2: each is required only when a directive or a section makes
	// it possible (see RequiredClasses).
	CovBatchClaim         = "batch_claim"          // a claim returned more than one row
	CovRescue             = "rescue"               // a rescue ran with an expired claim to act on
	CovDead               = "dead"                 // an event went DEAD
	CovLateOutcomeLenient = "late_outcome_lenient" // an expired owner's outcome before anyone took the row
	CovDeletedOnComplete  = "deleted_on_complete"  // a complete deleted its row
	// CovWaitingStep: a complete, retry or renew waited on another
	// worker's open claim transaction (wait.go). Never required: a strict
	// protocol's guard sees the expired lease and never waits.
	CovWaitingStep = "waiting_step"
	// CovSplitStep: a multi-statement complete, retry or renew ran in two
	// parts with other steps between (split.go). Counted, never required.
	CovSplitStep = "split_step"
	// CovEndSession: a worker's session ended while it held a session
	// lease (session.go). Required under lease=session.
	CovEndSession = "end_session"
)

// BaseClasses must all be non-zero after a default-budget run of a correct
// protocol whose sections make them possible (see RequiredClasses);
// FaultClasses too when faults are on.
var (
	BaseClasses  = []string{CovClaim, CovReclaim, CovComplete, CovStaleCompleteRejected, CovRetry, CovStaleRetryRejected, CovRenew, CovExpire, CovAge, CovRenewAged, CovPause, CovKill, CovOpenTxSkip}
	V2Classes    = []string{CovBatchClaim, CovRescue, CovDead, CovLateOutcomeLenient}
	FaultClasses = []string{CovRequestLost, CovReplyLost, CovDBRestart}
)

// needs says which sections make a class possible: without them the
// machine never draws the step, and the class is not required. A class
// missing here needs only the required sections.
var needs = map[string][]string{
	CovExpire:    {sut.Expire},
	CovRenew:     {sut.Renew},
	CovAge:       {sut.Age},
	CovRenewAged: {sut.Renew, sut.Age},
}

// directiveNeeds says which directive makes a version-2 class possible.
// deleted_on_complete is never required: done=delete allows a complete to
// delete, it does not demand it.
var directiveNeeds = map[string]string{
	CovBatchClaim:         "batch>1",
	CovDead:               "max_attempts",
	CovLateOutcomeLenient: "policy=lenient",
}

// RequiredClasses are the classes a run must all reach before its pass
// means anything: the base classes the protocol's sections make possible
// (has reports a section), the version-2 classes its directives make
// possible (p), the faults only when they are on, a restart only on a
// server the harness may crash. A class that depends on what the
// statements happen to do is never required.
func RequiredClasses(cfg Config, p model.Policy, has func(section string) bool, canRestart bool) []string {
	var out []string
	for _, class := range BaseClasses {
		if class == CovReclaim && p.MaxAttempts == 1 {
			// Every expired lease is a last attempt, to bury: no claim
			// must take one (a relaxed budget may, never must).
			continue
		}
		if class == CovOpenTxSkip && (p.SessionLease || !has(sut.Tx)) {
			continue // no claim transactions (session.go; a worker without tx)
		}
		if !slices.ContainsFunc(needs[class], func(s string) bool { return !has(s) }) {
			out = append(out, class)
		}
	}
	if p.SessionLease {
		out = append(out, CovEndSession)
	}
	possible := map[string]bool{
		CovBatchClaim:         p.Batch > 1,
		CovRescue:             has(sut.Rescue),
		CovDead:               p.MaxAttempts > 0,
		CovLateOutcomeLenient: p.Lenient,
	}
	for _, class := range V2Classes {
		if possible[class] {
			out = append(out, class)
		}
	}
	if cfg.Faults {
		for _, class := range FaultClasses {
			if class != CovDBRestart || canRestart {
				out = append(out, class)
			}
		}
	}
	return out
}

// ClassSections lists, for the help text, which sections (or directives)
// make each class required.
func ClassSections() map[string][]string {
	out := map[string][]string{CovRescue: {sut.Rescue}}
	for class, sections := range needs {
		out[class] = sections
	}
	for class, directive := range directiveNeeds {
		out[class] = []string{directive}
	}
	return out
}

// Coverage counts events across all checks of a run.
type Coverage struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *Coverage) add(class string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		c.counts = map[string]int{}
	}
	c.counts[class]++
}

// Counts returns a copy of the counts.
func (c *Coverage) Counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

// Missing lists the required classes that never happened.
func (c *Coverage) Missing(required []string) []string {
	counts := c.Counts()
	var out []string
	for _, k := range required {
		if counts[k] == 0 {
			out = append(out, k)
		}
	}
	return out
}

// Print writes the coverage table.
func (c *Coverage) Print(w io.Writer, classes []string) {
	counts := c.Counts()
	seen := map[string]bool{}
	var names []string
	for _, k := range classes {
		names = append(names, k)
		seen[k] = true
	}
	var extra []string
	for k := range counts {
		if !seen[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range append(names, extra...) {
		fmt.Fprintf(w, "  %-24s %7d\n", k, counts[k])
	}
}
