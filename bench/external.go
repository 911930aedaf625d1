package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/outboxlab/outboxlab/sut"
)

// The cost of a step through a worker executable, beside the Go worker's
// (step_us): the same state machine on the article's leased relay written
// in Python (examples/python/leased.py on Debian's /usr/bin/python3 and
// python3-psycopg), so that the worker protocol's price in a language
// other than Go is a figure, not a guess.

// pythonWorker is the worker executable measured, run from the checkout.
const (
	pythonWorker = "examples/python/leased.py"
	pythonFile   = "examples/python/leased.sql"
	python       = "/usr/bin/python3"
)

// errNoCheckout is the external figure's absence: the bench runs outside
// the repository, where the Python example is not.
var errNoCheckout = errors.New("examples/python is not under the working directory or a parent of it")

// checkoutRoot is the nearest directory, the working one or a parent,
// that holds the Python example.
func checkoutRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, pythonWorker)); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errNoCheckout
		}
		dir = parent
	}
}

// InstallPython installs the Python leased relay's file in a fresh schema
// of connString: the worker creates its table itself (its install).
func InstallPython(ctx context.Context, connString string) (*sut.Instance, error) {
	root, err := checkoutRoot()
	if err != nil {
		return nil, err
	}
	cmd := python + " " + filepath.Join(root, pythonWorker)
	p, err := sut.ResolveWorker(filepath.Join(root, pythonFile), cmd)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	inst, err := sut.Install(ctx, connString, p)
	if err != nil {
		return nil, fmt.Errorf("install %s through %s: %w", pythonFile, cmd, err)
	}
	return inst, nil
}

// externalStep is external_step_us: a quarter of step_us's checks (a
// Python step costs several Go ones), at least one.
func (r *runner) externalStep() error {
	checks := max(r.opt.Checks/4, 1)
	return r.step(fmt.Sprintf("state machine, %d checks of leased through %s %s", checks, python, pythonWorker), func() error {
		inst, err := InstallPython(r.ctx, r.srv.ConnString())
		if errors.Is(err, errNoCheckout) {
			fmt.Fprintf(r.progress, "bench: external_step_us not measured: %v\n", err)
			return nil
		}
		if err != nil {
			return err
		}
		defer inst.Close()
		s, err := StateMachine(r.srv, inst, r.opt.Config, checks, 1)
		r.f.ExternalStepUS = us(s.PerStep)
		return err
	})
}
