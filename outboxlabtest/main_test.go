package outboxlabtest_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/outboxlab/outboxlab/outboxlabtest"
)

func TestMain(m *testing.M) { outboxlabtest.Main(m) }

// recorder is a testing.TB that keeps what Check reports instead of
// failing the test, so that a test can assert that Check fails and how.
// Only the methods Check calls are implemented; the embedded TB is nil.
type recorder struct {
	testing.TB
	name   string
	mu     sync.Mutex
	failed []string
	fatal  bool
	logs   []string
}

func (r *recorder) Helper()      {}
func (r *recorder) Name() string { return r.name }
func (r *recorder) Log(args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprint(args...))
}
func (r *recorder) Error(args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = append(r.failed, fmt.Sprint(args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = append(r.failed, fmt.Sprintf(format, args...))
	r.fatal = true
}

func (r *recorder) report() string { return strings.Join(r.failed, "\n") }
