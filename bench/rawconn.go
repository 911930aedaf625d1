package bench

import (
	"context"
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// rawConn is a TCP connection whose reads and writes do not tell the Go
// scheduler that they are system calls (syscall.RawSyscall): on a
// non-blocking socket neither can block, and when one would, the wait is
// Go's own (the netpoller, under the connection's deadline). What that
// saves is a thread: while every goroutine waits on the network, sysmon,
// the runtime's monitor thread, goes to sleep, and the next system call
// (syscall.Syscall's entersyscall) wakes it; it then naps 20 µs at a time
// until the process is idle again, once per round trip, each nap a
// context switch on a machine of two cores whose other core runs the
// server's backend. Measured on the claim at 10^3 events with the partial
// index (BenchmarkClaim, 20,000 claims, perf stat): 5.8 context switches
// and 43 to 47 µs of client CPU a claim on Go's net.Conn, 3.1 and 25 to 29
// µs on this one; pgbench makes 3.0, one a round trip. In
// BenchmarkClaimAlternating the claim's p50 fell from 1.8 times pgbench's
// to 1.1 with it. perf record -g puts runtime.sysmon at a fifth of the old
// loop's samples and nowhere in this one's.
type rawConn struct {
	*net.TCPConn
	raw syscall.RawConn
}

// dialRaw is a pgconn DialFunc for rawConn.
func dialRaw(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, nil // a Unix socket: Go's own calls, as before
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		c.Close()
		return nil, err
	}
	return &rawConn{TCPConn: tc, raw: raw}, nil
}

func (c *rawConn) Read(b []byte) (n int, err error) {
	if len(b) == 0 {
		return 0, nil
	}
	rerr := c.raw.Read(func(fd uintptr) bool {
		n, err = rawIO(syscall.SYS_READ, fd, b)
		return err != syscall.EAGAIN
	})
	switch {
	case rerr != nil:
		return 0, c.opError("read", rerr)
	case err != nil:
		return 0, c.opError("read", os.NewSyscallError("read", err))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (c *rawConn) Write(b []byte) (int, error) {
	written := 0
	for written < len(b) {
		var n int
		var err error
		werr := c.raw.Write(func(fd uintptr) bool {
			n, err = rawIO(syscall.SYS_WRITE, fd, b[written:])
			return err != syscall.EAGAIN
		})
		if werr == nil && err != nil {
			werr = os.NewSyscallError("write", err)
		}
		if werr != nil {
			return written, c.opError("write", werr)
		}
		written += n
	}
	return written, nil
}

// rawIO is read(2) or write(2), retried on EINTR.
func rawIO(trap uintptr, fd uintptr, b []byte) (int, error) {
	for {
		r, _, e := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(r), nil
	}
}

func (c *rawConn) opError(op string, err error) error {
	if _, ok := err.(*net.OpError); ok {
		return err
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
