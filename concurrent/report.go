package concurrent

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/outboxlab/outboxlab/model"
)

// lines is a history as text, in order of call: each operation's call and
// return (ms from the first call), its lane and what it did.
//
//	0.00 ..   0.41  w1  w1.Claim() -> claimed e1 gen=1
func lines(ops []porcupine.Operation) []string {
	ops = slices.Clone(ops)
	slices.SortStableFunc(ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	if len(ops) == 0 {
		return nil
	}
	t0 := ops[0].Call
	ms := func(t int64) float64 { return float64(t-t0) / 1e6 }
	out := make([]string, 0, len(ops))
	for _, o := range ops {
		out = append(out, fmt.Sprintf("%7.2f .. %7.2f ms  %s", ms(o.Call), ms(o.Return), describe(o.Input.(Input), o.Output.(Output))))
	}
	return out
}

// writeHTML writes porcupine's visualisation of ops (one lane per actor,
// the faults as annotations) and returns its path, "" if it could not be
// written.
func (r *Runner) writeHTML(events []string, h *history, ops []porcupine.Operation, name string) string {
	m := Model(r.policy(), events, r.inst.Statements.HasGen)
	_, info := porcupine.CheckOperationsVerbose(m, ops, r.cfg.CheckTimeout)
	var notes []porcupine.Annotation
	first, last := span(ops)
	for _, n := range h.rec.notes {
		if n.End >= first && n.Start <= last {
			notes = append(notes, n)
		}
	}
	for i, a := range r.actors() {
		notes = append(notes, porcupine.Annotation{ClientId: a.client, Start: first, Description: a.name, Details: "lane " + strconv.Itoa(i)})
	}
	notes = append(notes,
		porcupine.Annotation{ClientId: r.fixtureClient(), Start: first, Description: "fixtures and reads"},
		porcupine.Annotation{ClientId: r.faultClient(), Start: first, Description: "faults (kill, db_restart)"})
	info.AddAnnotations(notes)
	dir := r.cfg.HTMLDir
	if dir == "" {
		dir = os.TempDir()
	}
	path := filepath.Join(dir, fmt.Sprintf("outboxlab-concurrent-%s-seed%d-history%s.html", safeName(r.inst.Proto.Name), r.cfg.Seed, name))
	if err := porcupine.VisualizePath(m, info, path); err != nil {
		return ""
	}
	writeLog(strings.TrimSuffix(path, ".html")+".json", events, ops)
	return path
}

// logged is a history as its JSON operation log: kept next to the HTML,
// so that a failure can be checked again (ReadLog) after the run.
type logged struct {
	Events []string
	Ops    []loggedOp
}

type loggedOp struct {
	Client       int
	Call, Return int64
	Input        Input
	Output       Output
}

func writeLog(path string, events []string, ops []porcupine.Operation) {
	l := logged{Events: events}
	for _, o := range ops {
		l.Ops = append(l.Ops, loggedOp{o.ClientId, o.Call, o.Return, o.Input.(Input), o.Output.(Output)})
	}
	b, err := json.MarshalIndent(l, "", " ")
	if err == nil {
		os.WriteFile(path, b, 0o644)
	}
}

// ReadLog reads an operation log written next to a failure's HTML.
func ReadLog(path string) (events []string, ops []porcupine.Operation, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var l logged
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, o := range l.Ops {
		ops = append(ops, porcupine.Operation{ClientId: o.Client, Call: o.Call, Return: o.Return, Input: o.Input, Output: o.Output})
	}
	return l.Events, ops, nil
}

func span(ops []porcupine.Operation) (first, last int64) {
	for i, o := range ops {
		if i == 0 || o.Call < first {
			first = o.Call
		}
		if o.Return > last {
			last = o.Return
		}
	}
	return first, last
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

// policy is what the protocol's directives and sections promise.
func (r *Runner) policy() model.Policy { return r.inst.Proto.Policy() }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
