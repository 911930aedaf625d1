package search

import (
	"fmt"
	"strings"
	"sync"

	"github.com/outboxlab/outboxlab/machine"
	"pgregory.net/rapid"
)

// RecordingTB is a rapid.TB that records instead of failing a Go test, so
// that a property can be run outside `go test` (the outboxlab command) and
// a test can assert that a property fails (the baseline, the mutants).
type RecordingTB struct {
	// Flags are the rapid flags its checks run under (WithRapidFlags),
	// over the command line's and the test's; nil for those alone.
	Flags  map[string]string
	mu     sync.Mutex
	name   string
	failed bool
	logs   []string
	errors []string
}

// NewRecordingTB returns a TB named name (rapid names fail files after it).
func NewRecordingTB(name string) *RecordingTB { return &RecordingTB{name: name} }

type failNow struct{}

// RunCheck runs rapid.Check on the harness with this TB and reports
// whether the property held.
func (tb *RecordingTB) RunCheck(h *machine.Harness) (passed bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(failNow); !ok {
				panic(r)
			}
		}
		passed = !tb.Failed()
	}()
	WithRapidFlags(tb.Flags, func() { rapid.Check(tb, h.Check) })
	return !tb.Failed()
}

func (tb *RecordingTB) Helper()      {}
func (tb *RecordingTB) Name() string { return tb.name }
func (tb *RecordingTB) Logf(format string, args ...any) {
	tb.record(&tb.logs, fmt.Sprintf(format, args...))
}
func (tb *RecordingTB) Log(args ...any)                  { tb.record(&tb.logs, fmt.Sprint(args...)) }
func (tb *RecordingTB) Skipf(format string, args ...any) { tb.Logf(format, args...); tb.SkipNow() }
func (tb *RecordingTB) Skip(args ...any)                 { tb.Log(args...); tb.SkipNow() }
func (tb *RecordingTB) SkipNow()                         { panic(failNow{}) }
func (tb *RecordingTB) Errorf(format string, args ...any) {
	tb.record(&tb.errors, fmt.Sprintf(format, args...))
	tb.Fail()
}
func (tb *RecordingTB) Error(args ...any) { tb.record(&tb.errors, fmt.Sprint(args...)); tb.Fail() }
func (tb *RecordingTB) Fatalf(format string, args ...any) {
	tb.Errorf(format, args...)
	tb.FailNow()
}
func (tb *RecordingTB) Fatal(args ...any) { tb.Error(args...); tb.FailNow() }
func (tb *RecordingTB) FailNow()          { tb.Fail(); panic(failNow{}) }
func (tb *RecordingTB) Fail() {
	tb.mu.Lock()
	tb.failed = true
	tb.mu.Unlock()
}
func (tb *RecordingTB) Failed() bool {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.failed
}

func (tb *RecordingTB) record(to *[]string, s string) {
	tb.mu.Lock()
	*to = append(*to, s)
	tb.mu.Unlock()
}

// Errors is what rapid reported: the failure, the seed and how to reproduce.
func (tb *RecordingTB) Errors() string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return strings.Join(tb.errors, "\n")
}

// Logs is everything rapid logged.
func (tb *RecordingTB) Logs() string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return strings.Join(tb.logs, "\n")
}

var _ rapid.TB = (*RecordingTB)(nil)
