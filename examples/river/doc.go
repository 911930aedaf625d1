// Package riverlab runs River's own code (github.com/riverqueue/river
// v0.51.2 with its pgx v5 driver, riverpgxv5) as an outboxlab Go driver,
// where testdata/libraries/river.sql is a SQL transcription of River
// v0.43.0: the schema is River's migrations, the claim is River's fetch
// query, complete and retry are what River's job executor sends to its
// completer, and the rescue pass is River's job rescuer's two queries. Each
// call goes through River's riverdriver.Executor (riverpgxv5's, on the
// worker's connection or transaction) and River's standard pilot, the layer
// River's producer, completer and rescuer call.
//
// What River keeps unexported (its job executor's decision, its completer's
// one-row batch, its rescuer's loop and retry decision) is mirrored in a few
// lines of Go, and each place names the River function it follows. What
// River leaves to its user is chosen here and named in driver.go: the queue
// ("default"), the attempt budget (2), the rescue horizon (1 hour, River's
// default, the driver's Lease), the worker id (the suite's worker name as
// River's ClientID) and the retry policy (River's shape, errors^4, in
// minutes rather than seconds, so that no backoff ends inside a check).
//
// docs/river.md compares this driver's profile with river.sql's.
package riverlab
