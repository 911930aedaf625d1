// Package outboxlab is a property-based and fault-injection test suite for
// PostgreSQL outbox claim protocols. The root package holds only tests: they
// wire the model (model/), the systems under test (sut/), the worker
// processes (worker/), the faults (faults/), the state machine (machine/)
// and the search and shrinking around it (search/) together. The command line
// tool is cmd/outboxlab.
package outboxlab
