// Package sut holds the systems under test as data: protocol files in the
// format of docs/protocol-format.md, their loader, and the code that installs a
// protocol in a fresh schema and runs its statements. No test logic lives here.
package sut

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/outboxlab/outboxlab/model"
)

// Section names.
const (
	Schema   = "schema"
	Claim    = "claim"
	Complete = "complete"
	Retry    = "retry"
	Renew    = "renew"
	Enqueue  = "enqueue"
	State    = "state"
	Expire   = "expire"
	Due      = "due"
	Age      = "age"
	// Rescue is the optional maintenance pass (a reaper) a separate actor
	// runs: expired claims back to READY, exhausted ones to DEAD.
	Rescue = "rescue"
	// Reset is a worker file's statements that empty the protocol's data
	// between checks, where emptying every table of the schema would drop
	// what the worker's library needs kept (its queue definitions, its
	// migration versions).
	Reset = "reset"
)

// sectionParams lists every section and the parameters it may take
// (@worker is allowed everywhere but schema).
var sectionParams = map[string][]string{
	Schema:   nil,
	Claim:    {"worker"},
	Complete: {"id", "generation", "worker"},
	Retry:    {"id", "generation", "worker"},
	Renew:    {"id", "generation", "worker"},
	Enqueue:  {"event_id", "worker"},
	State:    {"worker"},
	Expire:   {"id", "worker"},
	Due:      {"id", "worker"},
	Age:      {"id", "seconds", "worker"},
	Rescue:   {"worker"},
	Reset:    nil,
}

// multiSections may hold several statements, run in one transaction: the
// shapes real libraries use (lock rows into a temp table, then update them),
// which one statement cannot always say. The fixtures and the state query
// stay single: they stand for one observation or one instant.
var multiSections = []string{Claim, Complete, Retry, Renew, Rescue}

var requiredSections = []string{Schema, Claim, Complete, Retry}

// workerSections are the sections a worker runs in its own code: a file
// for a worker (--worker) has none of them.
var workerSections = []string{Claim, Complete, Retry, Renew, Rescue}

// maxLine bounds a protocol file's lines: one, with its line end, must fit
// in this many bytes.
const maxLine = 1024 * 1024

// Section is one section of a protocol file.
type Section struct {
	Name string
	SQL  string // as written, comments included
	Line int    // line of the "-- name:" header
	// Default is true for a section the file left out and the loader filled in.
	Default bool
}

// Protocol is a loaded protocol file.
type Protocol struct {
	Name  string // built-in name or file path as given
	File  string // where errors point: the path, or builtin/<name>.sql
	Order model.Order
	// Lease is the lease a claim or renew grants at least (lease=, default
	// 30s): the age fixture holds the protocol to it.
	Lease time.Duration
	// SessionLease: lease=session, a claim's lease is a lock its worker's
	// session holds (model.Policy.SessionLease). Such a file has no expire
	// or age section: the machine ends sessions, not leases.
	SessionLease bool
	// Batch is the most rows one claim returns (batch=, default 1).
	Batch int
	// Lenient lets an expired owner's outcome apply until someone else
	// takes the row (policy=lenient; the default is strict).
	Lenient bool
	// MaxAttempts is the attempt budget (max_attempts=); 0: none.
	MaxAttempts int
	// DeleteDone lets a completed event leave the state query (done=delete).
	DeleteDone bool
	// Fence is what the claim's generation is (fence=, default counter):
	// under FenceToken an opaque token the suite passes back as text.
	Fence    Fence
	Sections map[string]*Section
	Source   string // the whole file text
	// Worker is the command of a worker executable that runs the claim
	// and the outcomes (docs/worker-protocol.md); "" for a file that has
	// them as sections. Served are the operations the worker serves, as
	// its init_ok said at install (claim, complete and retry always).
	Worker string
	Served map[string]bool
}

// Has reports whether the protocol has the section (its own or a default),
// or its worker serves the operation. Install settles the defaults that
// depend on the server: it fills in state and drops the default age when
// the server rejects it.
func (p *Protocol) Has(name string) bool { return p.Sections[name] != nil || p.Served[name] }

// Policy is what the protocol's directives and sections promise: what the
// model holds it to.
func (p *Protocol) Policy() model.Policy {
	return model.Policy{
		Order:       p.Order,
		Batch:       p.Batch,
		Lenient:     p.Lenient,
		MaxAttempts: p.MaxAttempts,
		Delete:      p.DeleteDone,
		Rescue:      p.Has(Rescue),

		SessionLease: p.SessionLease,
	}
}

// Error is a problem with a protocol file, located at FILE:LINE.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// Resolve loads a protocol by built-in name or file path.
func Resolve(arg string) (*Protocol, error) {
	if src, ok := builtinSource(arg); ok {
		return Parse(arg, "builtin/"+arg+".sql", src)
	}
	b, err := os.ReadFile(arg)
	if err != nil {
		return nil, fmt.Errorf("protocol %q: not a built-in (%s) and not a readable file: %w",
			arg, strings.Join(BuiltinNames(), ", "), err)
	}
	return Parse(filepath.Base(strings.TrimSuffix(arg, ".sql")), arg, string(b))
}

// ResolveWorker loads the file of a protocol whose claim and outcomes a
// worker executable runs (command, as `outboxlab check --worker` takes it).
func ResolveWorker(path, command string) (*Protocol, error) {
	if strings.TrimSpace(command) == "" {
		return nil, errors.New("--worker: the command is empty")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("protocol file %q of the worker: %w", path, err)
	}
	return ParseWorker(filepath.Base(strings.TrimSuffix(path, ".sql")), path, string(b), command)
}

// ParseWorker is Parse for a worker's file: directives and the harness's
// sections only (enqueue, state, the fixtures, and optionally schema and
// reset); the worker serves claim, complete, retry, renew and rescue.
func ParseWorker(name, file, src, command string) (*Protocol, error) {
	return parse(name, file, src, command)
}

// Parse reads a protocol file's text. It reports every text-level error the
// format defines; errors only the server can find are left to Install.
func Parse(name, file, src string) (*Protocol, error) { return parse(name, file, src, "") }

func parse(name, file, src, worker string) (*Protocol, error) {
	p := &Protocol{Name: name, File: file, Order: model.FIFO, Lease: DefaultLease, Batch: 1, Sections: map[string]*Section{}, Source: src, Worker: worker}
	errAt := func(line int, format string, args ...any) error {
		return &Error{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	var cur *Section
	var body []string
	flush := func() {
		if cur != nil {
			cur.SQL = strings.Join(body, "\n")
		}
	}
	sc := bufio.NewScanner(strings.NewReader(src))
	sc.Buffer(nil, maxLine) // grows as needed: most files are a few KiB
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		trimmed := strings.TrimSpace(text)
		if name, ok := header(trimmed, "-- name:"); ok {
			if _, known := sectionParams[name]; !known {
				return nil, errAt(line, "unknown section %q (sections: %s)", name, strings.Join(sectionNames(), ", "))
			}
			if worker != "" && contains(workerSections, name) {
				return nil, errAt(line, "section %q: the worker (--worker) runs the %s; a worker's file holds only the harness's sections (enqueue, state, expire, due, age, schema, reset)", name, name)
			}
			if worker == "" && name == Reset {
				return nil, errAt(line, "section %q belongs to a worker's file (outboxlab check --worker); a protocol file's tables are emptied whole", name)
			}
			if prev := p.Sections[name]; prev != nil {
				return nil, errAt(line, "section %q appears twice (first at line %d)", name, prev.Line)
			}
			flush()
			cur = &Section{Name: name, Line: line}
			p.Sections[name] = cur
			body = nil
			continue
		}
		if kv, ok := header(trimmed, "-- outboxlab:"); ok {
			if cur != nil {
				return nil, errAt(line, "directive %q after the first section: directives go before it", kv)
			}
			if err := p.directive(kv); err != nil {
				return nil, errAt(line, "%v", err)
			}
			continue
		}
		if cur != nil {
			body = append(body, text)
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		// The scanner stopped on the line after the last one it read.
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, errAt(line+1, "line too long (the limit is 1 MiB)")
		}
		return nil, errAt(line+1, "read: %v", err)
	}
	required := requiredSections
	if worker != "" {
		// The schema may come from the worker's install; whether it does
		// is known only once it answers init (Install).
		required = nil
	}
	if strings.TrimSpace(src) == "" && worker == "" {
		// Line 1 even for 0 bytes: an editor jumps to FILE:1, not FILE:0.
		return nil, errAt(1, "empty protocol file: it needs sections %s", strings.Join(requiredSections, ", "))
	}
	for _, req := range required {
		if p.Sections[req] == nil {
			return nil, errAt(line, "missing required section %q", req)
		}
	}
	for _, s := range p.sorted() {
		if err := checkSection(file, s); err != nil {
			return nil, err
		}
	}
	if p.SessionLease {
		for _, name := range []string{Expire, Age} {
			if s := p.Sections[name]; s != nil {
				return nil, errAt(s.Line, "section %q: a session lease (lease=session) ends only with its session, which the suite ends itself; remove the section", name)
			}
		}
	}
	p.addDefaults()
	return p, nil
}

func header(line, prefix string) (string, bool) {
	if !strings.HasPrefix(strings.ToLower(line), prefix) {
		return "", false
	}
	return strings.TrimSpace(line[len(prefix):]), true
}

func checkSection(file string, s *Section) error {
	errAt := func(line int, format string, args ...any) error {
		return &Error{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	n := statementCount(s.SQL)
	if n == 0 {
		return errAt(s.Line, "section %q holds no SQL statement", s.Name)
	}
	if s.Name != Schema && n > 1 && !contains(multiSections, s.Name) {
		return errAt(lineOfStatement(s, 2), "section %q holds %d statements; it takes exactly one", s.Name, n)
	}
	allowed := sectionParams[s.Name]
	for _, t := range scanSQL(s.SQL) {
		if t.kind != '@' {
			continue
		}
		if !contains(allowed, t.name) {
			takes := "no parameters"
			if len(allowed) > 0 {
				takes = "@" + strings.Join(allowed, ", @")
			}
			return errAt(s.Line+1+strings.Count(s.SQL[:t.offset], "\n"),
				"section %q does not take parameter @%s (it takes %s)", s.Name, t.name, takes)
		}
	}
	return nil
}

// lineOfStatement is the file line on which the n-th statement of s starts.
// Comments and empty statements before it are skipped.
func lineOfStatement(s *Section, n int) int {
	pieces := statementPieces(s.SQL)
	if n < 1 || n > len(pieces) {
		return s.Line
	}
	pc := pieces[n-1]
	return s.Line + 1 + strings.Count(s.SQL[:pc.start+codeStart(s.SQL[pc.start:pc.end])], "\n")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sectionNames() []string {
	var names []string
	for n := range sectionParams {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// sorted returns the sections in file order.
func (p *Protocol) sorted() []*Section {
	var ss []*Section
	for _, s := range p.Sections {
		ss = append(ss, s)
	}
	sort.Slice(ss, func(i, j int) bool { return ss[i].Line < ss[j].Line })
	return ss
}
