package faults

import "testing"

func TestWithAddress(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "postgres://postgres@127.0.0.1:40001/postgres?sslmode=disable"},
		{"postgresql://u:p@db:5432/x?host=db&port=5432", "postgresql://u:p@127.0.0.1:40001/x"},
		{"host=db port=5432 user=u", "host=db port=5432 user=u host=127.0.0.1 port=40001"},
		{"", "host=127.0.0.1 port=40001"},
	} {
		got, err := withAddress(c.in, "127.0.0.1:40001")
		if err != nil || got != c.want {
			t.Errorf("withAddress(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestTCPAddress(t *testing.T) {
	if got, err := tcpAddress("postgres://u@127.0.0.1:5433/x"); err != nil || got != "127.0.0.1:5433" {
		t.Errorf("tcpAddress = %q, %v", got, err)
	}
	if _, err := tcpAddress("host=/var/run/postgresql user=u"); err == nil {
		t.Error("a Unix socket server: want an error, a proxy cannot stand in front of it")
	}
}
