package driver

import (
	"context"
	"strings"
	"testing"
)

// nop is the least protocol: enough to register.
type nop struct{}

func (nop) Directives() Directives                                { return Directives{} }
func (nop) Install(context.Context, DB) error                     { return nil }
func (nop) Enqueue(context.Context, DB, string) error             { return nil }
func (nop) Claim(context.Context, DB, string) ([]*Claimed, error) { return nil, nil }
func (nop) Complete(context.Context, DB, Claimed) (bool, error)   { return false, nil }
func (nop) Retry(context.Context, DB, Claimed) (bool, error)      { return false, nil }
func (nop) State(context.Context, DB) ([]Row, error)              { return nil, nil }
func (nop) Expire(context.Context, DB, string) error              { return nil }
func (nop) Due(context.Context, DB, string) error                 { return nil }

func TestRegisterLookup(t *testing.T) {
	Register("registry-test", nop{})
	if p, err := Lookup("registry-test"); err != nil || p == nil {
		t.Fatalf("Lookup after Register: %v, %v", p, err)
	}
	_, err := Lookup("never-registered")
	if err == nil || !strings.Contains(err.Error(), `"never-registered"`) || !strings.Contains(err.Error(), "registry-test") {
		t.Fatalf("Lookup of an unknown name: %v; want the name and the registered ones", err)
	}
}

func TestRegisterRefusesBadInput(t *testing.T) {
	Register("registry-dup", nop{})
	for name, f := range map[string]func(){
		"twice":      func() { Register("registry-dup", nop{}) },
		"empty name": func() { Register("", nop{}) },
		"nil":        func() { Register("registry-nil", nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register %s: no panic", name)
				}
			}()
			f()
		}()
	}
}
