// Package report draws a counterexample as one self-contained HTML page:
// a lane per worker (and for the fixtures, the rescuer and the server),
// the steps in order from top to bottom, every row's status, generation,
// lease and owner after each step as the model and the database had it,
// faults and waiting steps marked, the violating step highlighted with
// its rule, the model's expectation beside what the system returned, and
// the command that reproduces the search.
//
// The page needs nothing but itself: inline CSS and a few lines of inline
// script, no fonts, no network. Everything from the run (protocol names,
// SQL errors, ops) is escaped by html/template.
//
// A report is drawn from a machine.Trace, which a harness records while it
// replays a program:
//
//	catch := search.On(h).Search(name, 0)
//	if catch.Failure != nil {
//		trace, err := report.ForCatch(h, catch, reproduce)
//		...
//		path, err := report.Write("counterexample.html", trace)
//	}
package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/search"
)

// Capture replays program (a counterexample as the machine printed it,
// Harness.Program after a failed check, or as a user saved it) on h,
// recording every step, and returns the trace with reproduce as its
// command (CaptureProgram). It fails for a program that does not read
// back.
func Capture(h *machine.Harness, program []string, reproduce string) (*machine.Trace, error) {
	p, err := machine.ParseProgram(program)
	if err != nil {
		return nil, fmt.Errorf("the counterexample cannot be replayed for its report: %w", err)
	}
	return CaptureProgram(h, p, reproduce)
}

// CaptureProgram replays p on h, recording every step, and returns the
// trace with reproduce as its command. Its faults are injected again at
// their steps. It fails for a program the harness's protocol cannot run.
func CaptureProgram(h *machine.Harness, p machine.Program, reproduce string) (*machine.Trace, error) {
	t, err := h.Trace(p)
	if err != nil {
		return nil, fmt.Errorf("replay the counterexample for its report: %w", err)
	}
	t.Reproduce = reproduce
	return t, nil
}

// ForCatch is the trace of a search's counterexample (c.Recorded, shrunk,
// with c.Failure): replayed on h with the recorder (CaptureProgram) or,
// when the replay cannot run it, read from the printed program, without
// rows (machine.TraceOfProgram), the reason in NotReplayed. h must be the
// harness the search ran on, still open.
func ForCatch(h *machine.Harness, c search.Catch, reproduce string) (*machine.Trace, error) {
	if !c.Caught || c.Failure == nil {
		return nil, fmt.Errorf("report: no counterexample to draw")
	}
	err := fmt.Errorf("the check failed at its setup, before any step")
	if c.Recorded.Workers != nil {
		var t *machine.Trace
		if t, err = CaptureProgram(h, c.Recorded, reproduce); err == nil {
			return t, nil
		}
	}
	t := machine.TraceOfProgram(h.Inst.Proto.Name, c.Program, c.Failure)
	t.Reproduce, t.NotReplayed = reproduce, err.Error()
	return t, nil
}

// Render writes the page of t to w.
func Render(w io.Writer, t *machine.Trace) error {
	if t == nil {
		return fmt.Errorf("report: no trace")
	}
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, layout(t)); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// Write renders t into the file path (its directory is made if missing)
// and returns the file's absolute path, the one to print.
func Write(path string, t *machine.Trace) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("report %s: %w", path, err)
	}
	var b bytes.Buffer
	if err := Render(&b, t); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	if err := os.WriteFile(abs, b.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	return abs, nil
}

// pageHTML is the page's template: markup, stylesheet and script in one
// file, so that the report is one file with nothing to fetch.
//
//go:embed page.html
var pageHTML string

// pageTemplate escapes every value by its context (html/template): a rule,
// a SQL error or a protocol name holding markup renders as text.
var pageTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"cols": func(p page) int { return 1 + len(p.Lanes) + len(p.Events) },
}).Parse(pageHTML))
