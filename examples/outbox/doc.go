// Package outbox stands for a service's outbox relay, as a user of
// outboxlab would have it: its claim SQL is db/outbox.sql, and
// outbox_test.go checks that SQL with outboxlabtest on every go test.
package outbox
