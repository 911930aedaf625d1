package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/sut"
)

// Plan is the claim's EXPLAIN (ANALYZE, BUFFERS) at one backlog: the text a
// person reads, and the scan the verdict is drawn from.
type Plan struct {
	Text string `json:"text"` // every statement of the claim, in order
	// Scan is the scan of the protocol's tables that discarded the most
	// rows; the verdict is about it.
	Scan    ScanNode `json:"scan"`
	KeyLine string   `json:"key_line"` // the scan as one line
	// Removed is what the claim's scans of the protocol's tables read and
	// threw away (Rows Removed by Filter and by Index Recheck, all loops).
	Removed int `json:"rows_removed"`
	// NotSent is how many rows of the backlog are not SENT: a claim that
	// throws away more than these has read SENT rows.
	NotSent int `json:"not_sent"`
	// ReadsSent is the verdict: the claim reads SENT rows, so its cost
	// grows with the table's history, not with the queue.
	ReadsSent bool `json:"reads_sent"`
	// Verdict says so in words, with the index that would keep the claim
	// flat when it reads SENT rows (SuggestedIndex, when the filter gives
	// one).
	Verdict        string `json:"verdict"`
	SuggestedIndex string `json:"suggested_index,omitempty"`
}

// ScanNode is the part of a plan node the verdict uses.
type ScanNode struct {
	NodeType string   `json:"node_type"`
	Relation string   `json:"relation"`
	Index    string   `json:"index,omitempty"`
	Filter   string   `json:"filter,omitempty"`
	SortKey  []string `json:"sort_key,omitempty"` // of the Sort above it, if any
	Removed  int      `json:"rows_removed"`
	HitBlks  int      `json:"shared_hit_blocks"`
	ReadBlks int      `json:"shared_read_blocks"`
}

// planNode is EXPLAIN's FORMAT JSON node, the fields read here.
type planNode struct {
	NodeType        string     `json:"Node Type"`
	Relation        string     `json:"Relation Name"`
	Index           string     `json:"Index Name"`
	Filter          string     `json:"Filter"`
	SortKey         []string   `json:"Sort Key"`
	RemovedByFilter float64    `json:"Rows Removed by Filter"`
	RemovedRecheck  float64    `json:"Rows Removed by Index Recheck"`
	Loops           float64    `json:"Actual Loops"`
	HitBlks         float64    `json:"Shared Hit Blocks"`
	ReadBlks        float64    `json:"Shared Read Blocks"`
	Plans           []planNode `json:"Plans"`
}

// explainClaim runs every statement of the claim under EXPLAIN (ANALYZE,
// BUFFERS), in order, in a transaction it rolls back: the plans are of
// claims that really ran, and the table is left as it was. It runs twice,
// in JSON for the verdict and in text for a person, each rolled back.
func explainClaim(ctx context.Context, inst *sut.Instance, tables []string, notSent int) (Plan, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	st := inst.Statements.Stmts[sut.Claim]
	stmts := append(append([]sut.Stmt{}, st.Prelude...), sut.Stmt{SQL: st.SQL, Params: st.Params})
	plan := Plan{NotSent: notSent}
	var roots []planNode
	err := inRolledBackTx(ctx, inst.Conn, func(tx pgx.Tx) error {
		for i, s := range stmts {
			var raw []byte
			if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+s.SQL, explainArgs(s)...).Scan(&raw); err != nil {
				return fmt.Errorf("explain the claim's statement %d: %w", i+1, err)
			}
			var out []struct{ Plan planNode }
			if err := json.Unmarshal(raw, &out); err != nil || len(out) != 1 {
				return fmt.Errorf("read the plan of the claim's statement %d: %v", i+1, err)
			}
			roots = append(roots, out[0].Plan)
		}
		return nil
	})
	if err != nil {
		return plan, err
	}
	var text []string
	err = inRolledBackTx(ctx, inst.Conn, func(tx pgx.Tx) error {
		for i, s := range stmts {
			rows, _ := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+s.SQL, explainArgs(s)...)
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return fmt.Errorf("explain the claim's statement %d: %w", i+1, err)
			}
			text = append(text, strings.Join(lines, "\n"))
		}
		return nil
	})
	plan.Text = strings.Join(text, "\n\n")
	for _, r := range roots {
		walkScans(r, nil, tables, func(n ScanNode) {
			plan.Removed += n.Removed
			if plan.Scan.Relation == "" || n.Removed > plan.Scan.Removed {
				plan.Scan = n
			}
		})
	}
	plan.ReadsSent = plan.Removed > notSent
	plan.KeyLine = plan.Scan.line()
	return plan, err
}

// explainArgs sends the claim's parameters (only @worker) as literals:
// pgx's simple protocol puts them in the text, which EXPLAIN needs.
func explainArgs(s sut.Stmt) []any {
	args := []any{pgx.QueryExecModeSimpleProtocol}
	for range s.Params {
		args = append(args, "b1")
	}
	return args
}

func inRolledBackTx(ctx context.Context, conn *pgx.Conn, fn func(pgx.Tx) error) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	return fn(tx)
}

// walkScans calls fn for every scan of one of the tables, with the
// sort key of the nearest Sort above it.
func walkScans(n planNode, sortKey []string, tables []string, fn func(ScanNode)) {
	if n.NodeType == "Sort" || n.NodeType == "Incremental Sort" {
		sortKey = n.SortKey
	}
	// Scans only: ModifyTable names the table too, and reads nothing.
	if strings.Contains(n.NodeType, "Scan") && contains(tables, n.Relation) {
		loops := max(n.Loops, 1)
		fn(ScanNode{NodeType: n.NodeType, Relation: n.Relation, Index: n.Index, Filter: n.Filter, SortKey: sortKey,
			Removed: int((n.RemovedByFilter + n.RemovedRecheck) * loops),
			HitBlks: int(n.HitBlks), ReadBlks: int(n.ReadBlks)})
	}
	for _, c := range n.Plans {
		walkScans(c, sortKey, tables, fn)
	}
}

func (n ScanNode) line() string {
	if n.Relation == "" {
		return "no scan of the protocol's tables"
	}
	s := n.NodeType
	if n.Index != "" {
		s += " using " + n.Index
	}
	s += " on " + n.Relation
	var parts []string
	if n.Filter != "" {
		parts = append(parts, "Filter: "+n.Filter)
	}
	parts = append(parts, fmt.Sprintf("Rows Removed by Filter: %d", n.Removed),
		fmt.Sprintf("Buffers: shared hit=%d read=%d", n.HitBlks, n.ReadBlks))
	return s + " (" + strings.Join(parts, "; ") + ")"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
