// Package pgbosslab checks pg-boss 12.38.1's own code (worker.mjs, a Node
// worker executable of the worker protocol) through outboxlab's Go API:
// pgboss_test.go runs the profile of its two forms, the job objects pg-boss
// fences (since 12.35.0) and the plain ids it does not, and pins them
// (docs/libraries.md). `npm ci` in this directory installs pg-boss first.
package pgbosslab
