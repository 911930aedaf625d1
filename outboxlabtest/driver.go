package outboxlabtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/driver"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/verdict"
)

// CheckDriver is Check for a protocol written in Go: the driver registered
// under name (package driver) is searched as a file is, and t fails unless
// it passes, with the broken rule, the shrunk counterexample and the go
// test command that reproduces it. There is no outboxlab check line: the
// command cannot load a Go driver, only the test binary that registers it.
func CheckDriver(t testing.TB, name string, opts ...Option) {
	t.Helper()
	res, err := runDriver(name, opts)
	if err != nil {
		t.Fatalf("outboxlabtest: %v", err)
		return // a testing.TB of a test's own may not stop the goroutine
	}
	if res.Reproduce != "" {
		res.Reproduce = goTestCommand(t.Name(), res)
	}
	text := "outboxlab: " + printed(res)
	if res.Result == verdict.Pass {
		t.Log(text)
		return
	}
	if res.Result == verdict.Fail {
		if path, err := keepCounterexample(t.Name(), res); err != nil {
			text += fmt.Sprintf("  (could not keep the counterexample: %v)\n", err)
		} else if path != "" {
			text += "  counterexample kept in " + path + "\n"
		}
	}
	t.Error(text)
}

// RunDriver is CheckDriver without the test: the verdict, for a test that
// asserts on it (a broken variant of the driver that must fail). Its
// Reproduce is the go test flags that run the failing check alone, with
// no -run: add the name of the test that calls it.
func RunDriver(name string, opts ...Option) (Result, error) {
	res, err := runDriver(name, opts)
	if err == nil && res.Reproduce != "" {
		res.Reproduce = goTestCommand("", res)
	}
	return res, err
}

// runDriver runs the search with the Reproduce line verdict makes, whose
// flags goTestCommand reads, and without its replay line.
func runDriver(name string, opts []Option) (Result, error) {
	if newOptions(opts).worker != "" {
		return Result{}, errors.New("outboxlabtest.Worker: a Go driver runs in the suite's own worker processes; use Check or Run for a worker executable")
	}
	res, err := run(func() (installer, error) {
		// Here rather than at install: an unregistered name is bad input,
		// told before any server starts.
		if _, err := driver.Lookup(name); err != nil {
			return nil, err
		}
		return func(ctx context.Context, connString string) (*sut.Instance, error) {
			return sut.InstallDriver(ctx, connString, name)
		}, nil
	}, opts)
	// The command cannot load a Go driver: no outboxlab replay line.
	res.Replay = ""
	return res, err
}

// printed is the result as verdict prints it.
func printed(res Result) string {
	var sb strings.Builder
	if res.Profile != nil {
		verdict.PrintProfile(&sb, res)
	} else {
		verdict.Print(&sb, res)
	}
	return sb.String()
}
