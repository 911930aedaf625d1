// Package gopgx is an outbox relay's repository written in Go with pgx,
// checked by outboxlab through the Go driver API (package driver) rather
// than a SQL file: repo.go is the code a relay already has, driver.go the
// thin adapter outboxlab runs, and gopgx_test.go registers it and checks
// it, and checks a broken variant to show what a failure looks like.
//
// The protocol is the article's leased one (outboxlab's built-in leased):
// a claim takes the oldest due READY row or an expired lease, bumps its
// generation and leases it for 30 seconds; mark-sent and reschedule apply
// only for the claim's generation while its lease is live.
package gopgx
