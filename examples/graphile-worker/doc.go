// Package graphileworkerlab checks graphile-worker 0.18.0's own code
// (worker.mjs, a Node worker executable of the worker protocol) through
// outboxlab's Go API: graphileworker_test.go runs its profile and pins it
// (docs/libraries.md). `npm ci` in this directory installs graphile-worker
// first.
package graphileworkerlab
