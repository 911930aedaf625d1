package outbox_test

import (
	"testing"

	"github.com/outboxlab/outboxlab/outboxlabtest"
)

// TestMain lets the test binary double as outboxlab's worker processes.
func TestMain(m *testing.M) { outboxlabtest.Main(m) }

// TestOutboxProtocol searches the relay's claims, publishes, releases and
// lease extensions, interleaved with pauses, kills, expired leases and
// network faults, for a step the ownership model forbids. The budget is
// rapid's: RAPID_CHECKS=10000 for a nightly run, -short for a quick one.
func TestOutboxProtocol(t *testing.T) {
	outboxlabtest.Check(t, "db/outbox.sql")
}
