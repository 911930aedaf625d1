package worker

import _ "unsafe" // for go:linkname

// MonoNow is CLOCK_MONOTONIC in nanoseconds: one clock for every process
// on the machine, so that the records a worker writes and the parent's own
// (the fixture actor's, the fault loop's) order in one history. It is the
// runtime's own reading (the vDSO's, no system call); time.Now hides it
// behind an offset of its process's start.
func MonoNow() int64 { return nanotime() }

// The runtime keeps this linkname for outside packages (runtime's
// time_nofake.go: "widely used packages access it using linkname").
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64
