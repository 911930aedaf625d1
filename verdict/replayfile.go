package verdict

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/outboxlab/outboxlab/machine"
)

// A Counterexample is one program a file holds, with what the file says
// of the check that found it: what `outboxlab replay FILE` runs.
type Counterexample struct {
	Line      int // the file's line it starts at
	Program   machine.Program
	StepLines []int // each step's line in the file (a JSON object's steps: its line)
	// Topology and Settings are a --json object's ("" and nil for a
	// printed program); Protocol a printed program's "# protocol:" header.
	Topology  string
	Settings  *Settings
	Protocol  string
	Violation string // the rule the check found, "" when the file does not say
}

// StepLine is the file's line of step n (from 1).
func (c Counterexample) StepLine(n int) int {
	if n >= 1 && n <= len(c.StepLines) {
		return c.StepLines[n-1]
	}
	return c.Line
}

// ReadCounterexamples reads the counterexamples of a file: the objects of
// a `check --json` output that hold a program (one per failing protocol),
// or one printed program (as check prints it, indented or not; lines
// starting with # are comments, "# protocol: NAME" names its protocol).
// An error is PATH:LINE: what is wrong.
func ReadCounterexamples(path string) ([]Counterexample, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		return readJSON(path, b)
	}
	c, err := readPrinted(path, string(b))
	if err != nil {
		return nil, err
	}
	return []Counterexample{c}, nil
}

// readJSON reads the objects of a --json output, one after another.
func readJSON(path string, b []byte) ([]Counterexample, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	lineAt := func(off int64) int { return 1 + bytes.Count(b[:min(int(off), len(b))], []byte("\n")) }
	var out []Counterexample
	for {
		start := dec.InputOffset()
		// The object starts after the blanks the decoder skips.
		for start < int64(len(b)) && strings.ContainsRune(" \t\r\n", rune(b[start])) {
			start++
		}
		var r Result
		err := dec.Decode(&r)
		if errors.Is(err, io.EOF) {
			break
		}
		line := lineAt(start)
		if err != nil {
			var syn *json.SyntaxError
			if errors.As(err, &syn) {
				line = lineAt(syn.Offset)
			}
			return nil, fmt.Errorf("%s:%d: not a check --json object: %v", path, line, err)
		}
		if r.Program == nil {
			if r.Result == Fail {
				return nil, fmt.Errorf("%s:%d: %s failed with no program to replay (it failed at its setup, before any step)", path, line, r.Protocol)
			}
			continue
		}
		p, err := r.Program.Machine()
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, line, err)
		}
		if r.Settings == nil {
			return nil, fmt.Errorf("%s:%d: a program without its settings", path, line)
		}
		if _, err := r.Settings.Relax(); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, line, err)
		}
		lines := make([]int, len(p.Steps))
		for i := range lines {
			lines[i] = line
		}
		out = append(out, Counterexample{Line: line, Program: p, StepLines: lines, Topology: r.Topology, Settings: r.Settings, Violation: r.Violation})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s:1: no counterexample to replay: no object holds a program (every check passed?)", path)
	}
	return out, nil
}

var lineInError = regexp.MustCompile(`^line (\d+): `)

// readPrinted reads a printed program: its lines from the setup on,
// without the indentation check's output gives them.
func readPrinted(path, text string) (Counterexample, error) {
	lines := strings.Split(text, "\n")
	c := Counterexample{Line: 1}
	indent := ""
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if v, ok := strings.CutPrefix(t, "# protocol: "); ok {
			c.Protocol = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(t, "# rule: "); ok {
			c.Violation = strings.TrimSpace(v)
		}
		if strings.HasPrefix(t, "setup:") && c.Line == 1 {
			c.Line, indent = i+1, l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		}
	}
	drained := false
	for i, l := range lines {
		l = strings.TrimRight(strings.TrimPrefix(l, indent), "\r")
		lines[i] = l
		switch t := strings.TrimSpace(l); {
		case t == "-- drain --":
			drained = true
		case !drained && len(l) > 4 && l[3] == '.':
			c.StepLines = append(c.StepLines, i+1)
		case !drained && machine.NamesUnprintedStep(t):
			c.StepLines = append(c.StepLines, i+1)
		}
	}
	p, err := machine.ParseProgram(lines)
	if err != nil {
		if m := lineInError.FindStringSubmatch(err.Error()); m != nil {
			n, _ := strconv.Atoi(m[1])
			return c, fmt.Errorf("%s:%d: %s", path, n, strings.TrimPrefix(err.Error(), m[0]))
		}
		return c, fmt.Errorf("%s:%d: %v", path, c.Line, err)
	}
	c.Program = p
	return c, nil
}
