package sut

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/outboxlab/outboxlab/model"
)

// The directives: what a protocol promises beyond its SQL, one
// "-- outboxlab: KEY=VALUE" line each before the first section.

// The lease directive's default and bounds. Leases end only through the
// fixtures, never the wall clock, so the bounds only keep a value sane: under
// a second is surely a typo for a longer unit, over a day a lease no real
// worker would hold.
const (
	DefaultLease = 30 * time.Second
	minLease     = time.Second
	maxLease     = 24 * time.Hour
)

// maxBatch bounds batch= and max_attempts=: the model keeps a handful of
// rows, so a larger value could never be reached by a check anyway.
const maxBatch = 16

// knownDirectives lists the directives, for the unknown-directive error.
var knownDirectives = []string{"batch", "done", "fence", "lease", "max_attempts", "order", "policy"}

// Fence is what a claim's generation is (fence=): a counter the claim
// raises by one, or an opaque token compared only for equality.
type Fence int

const (
	// FenceCounter is the default: generation is an integer each claim
	// of a row raises by exactly one, which the model predicts.
	FenceCounter Fence = iota
	// FenceToken: generation is an opaque token (an integer, a uuid or
	// text), new on every claim of a row; the model predicts none.
	FenceToken
)

// String is the directive's value: counter or token.
func (f Fence) String() string {
	if f == FenceToken {
		return "token"
	}
	return "counter"
}

func (p *Protocol) directive(kv string) error {
	key, value, ok := strings.Cut(kv, "=")
	key, value = strings.TrimSpace(key), strings.TrimSpace(value)
	if !ok {
		return fmt.Errorf("directive %q is not KEY=VALUE", kv)
	}
	switch key {
	case "order":
		switch model.Order(value) {
		case model.FIFO, model.Any:
			p.Order = model.Order(value)
			return nil
		}
		return fmt.Errorf("order=%s: want order=fifo or order=any", value)
	case "lease":
		if value == "session" {
			p.SessionLease = true
			return nil
		}
		d, err := parseLease(value)
		if err != nil {
			return err
		}
		p.Lease = d
		return nil
	case "batch":
		n, err := parseCount(key, value)
		if err != nil {
			return err
		}
		p.Batch = n
		return nil
	case "max_attempts":
		n, err := parseCount(key, value)
		if err != nil {
			return err
		}
		p.MaxAttempts = n
		return nil
	case "policy":
		switch value {
		case "strict", "lenient":
			p.Lenient = value == "lenient"
			return nil
		}
		return fmt.Errorf("policy=%s: want policy=strict or policy=lenient", value)
	case "done":
		switch value {
		case "keep", "delete":
			p.DeleteDone = value == "delete"
			return nil
		}
		return fmt.Errorf("done=%s: want done=keep or done=delete", value)
	case "fence":
		switch value {
		case "counter", "token":
			p.Fence = FenceCounter
			if value == "token" {
				p.Fence = FenceToken
			}
			return nil
		}
		return fmt.Errorf("fence=%s: want fence=counter or fence=token", value)
	}
	return fmt.Errorf("unknown directive %q (known: %s)", key, strings.Join(knownDirectives, ", "))
}

// parseLease reads the lease directive's value, a Go duration from 1s to
// 24h. The messages do not quote time.ParseDuration's, so they stay the same
// whatever Go version built the tool.
func parseLease(value string) (time.Duration, error) {
	const want = "want a Go duration from 1s to 24h, such as lease=30s, lease=5m or lease=1h, or lease=session"
	d, err := time.ParseDuration(value)
	if err != nil {
		return 0, fmt.Errorf("lease=%s: not a duration: %s", value, want)
	}
	if d < minLease || d > maxLease {
		return 0, fmt.Errorf("lease=%s: out of range: %s", value, want)
	}
	return d, nil
}

// parseCount reads batch= or max_attempts=, an integer from 1 to 16. Only
// digits: strconv's "+3" would be a value no reader of the file expects.
func parseCount(key, value string) (int, error) {
	want := fmt.Sprintf("want an integer from 1 to %d", maxBatch)
	if value == "" || strings.Trim(value, "0123456789") != "" {
		return 0, fmt.Errorf("%s=%s: not an integer: %s", key, value, want)
	}
	n, err := strconv.Atoi(value)
	if err != nil || n < 1 || n > maxBatch {
		return 0, fmt.Errorf("%s=%s: out of range: %s", key, value, want)
	}
	return n, nil
}
