// Package proc holds what several packages ask of the operating system
// about processes.
package proc

import "syscall"

// Alive reports whether a process with this pid exists (one owned by
// another user counts).
func Alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
