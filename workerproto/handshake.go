package workerproto

import (
	"fmt"
	"slices"
	"time"
)

// Config is what init tells a worker.
type Config struct {
	DSN             string
	Schema          string
	OpTimeout       time.Duration
	WaitTimeout     time.Duration
	ApplicationName string
	Directives      Directives
}

// InitTimeout is how long a worker has to answer init.
const InitTimeout = 10 * time.Second

// Hello is what init_ok said.
type Hello struct {
	Features []string
	// Fence is counter, token or none: the worker's, or the file's when
	// the worker repeated none.
	Fence string
}

// Has reports whether the worker serves the optional request feature.
func (h Hello) Has(feature string) bool { return slices.Contains(h.Features, feature) }

// Init sends init and checks init_ok. An error reply to init is the
// worker's refusal to start, returned as an *Error.
func (c *Client) Init(cfg Config) (Hello, error) {
	r, err := c.Call(Request{Type: Init, Protocol: Version, Worker: c.Worker, DSN: cfg.DSN, Schema: cfg.Schema,
		OpTimeoutMS: cfg.OpTimeout.Milliseconds(), WaitTimeoutMS: cfg.WaitTimeout.Milliseconds(),
		ApplicationName: cfg.ApplicationName, Directives: &cfg.Directives}, InitTimeout)
	if err == ErrTimeout {
		return Hello{}, c.broke(Init, fmt.Sprintf("no init_ok within %v", InitTimeout), "")
	}
	if err != nil {
		return Hello{}, err
	}
	if r.Type == "error" {
		return Hello{}, c.broke(Init, "init refused", fmt.Sprintf("%s: %s", r.Code, r.Text))
	}
	h := Hello{Features: r.Features, Fence: r.Fence}
	if h.Fence == "" {
		h.Fence = cfg.Directives.Fence
	}
	switch h.Fence {
	case "counter", "token", "none":
	default:
		return Hello{}, c.broke(Init, fmt.Sprintf("init_ok's fence %q is not counter, token or none", h.Fence), "")
	}
	return h, nil
}
