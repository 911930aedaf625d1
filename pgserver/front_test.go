package pgserver

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// TestFrontMovesAndCutsConnections: the front forwards to its target; a
// hold cuts what it forwarded, a connection made during the hold waits,
// and point sends it to the new target.
func TestFrontMovesAndCutsConnections(t *testing.T) {
	a, b := echoServer(t, "a"), echoServer(t, "b")
	f, err := startFront(a)
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	first := dialFront(t, f)
	if got := roundTrip(t, first, "1"); got != "a:1" {
		t.Fatalf("before the move: %q, want a:1", got)
	}
	f.hold()
	first.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := first.Read(make([]byte, 1)); err == nil {
		t.Fatalf("a forwarded connection survived the hold (read %d bytes)", n)
	}
	second := dialFront(t, f)
	if _, err := io.WriteString(second, "2\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // it waits; nothing to forward to
	f.point(b)
	if got := readLine(t, second); got != "b:2" {
		t.Fatalf("the connection made during the hold got %q, want b:2", got)
	}
}

// echoServer answers each line with its name, a colon and the line.
func echoServer(t *testing.T, name string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				lines := bufio.NewScanner(c)
				for lines.Scan() {
					io.WriteString(c, name+":"+lines.Text()+"\n")
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func dialFront(t *testing.T, f *front) net.Conn {
	c, err := net.DialTimeout("tcp", f.ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func roundTrip(t *testing.T, c net.Conn, line string) string {
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		t.Fatal(err)
	}
	return readLine(t, c)
}

func readLine(t *testing.T, c net.Conn) string {
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return line[:len(line)-1]
}
