package sut

import (
	"strconv"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/model"
)

// TestParseSessionLease: lease=session is a policy of its own; such a file
// gets no default expire or age section, and one of its own is an error at
// its line (the suite ends sessions, not leases).
func TestParseSessionLease(t *testing.T) {
	p := mustParse(t, "-- outboxlab: lease=session\n"+body)
	if want := (model.Policy{Order: model.FIFO, Batch: 1, SessionLease: true}); p.Policy() != want {
		t.Errorf("Policy() = %+v, want %+v", p.Policy(), want)
	}
	if !p.SessionLease || p.Has(Expire) || p.Has(Age) || !p.Has(Due) {
		t.Errorf("SessionLease %v, has expire %v, age %v, due %v: want true, false, false, true", p.SessionLease, p.Has(Expire), p.Has(Age), p.Has(Due))
	}
	src := "-- outboxlab: lease=session\n" + body + "-- name: expire\nUPDATE outbox_lab SET lease_until = now() WHERE id = @id;\n"
	_, err := Parse("x", "x.sql", src)
	line := strings.Count(src[:strings.Index(src, "-- name: expire")], "\n") + 1
	if err == nil || !strings.HasPrefix(err.Error(), "x.sql:"+strconv.Itoa(line)+": section \"expire\": a session lease") {
		t.Errorf("an expire section under lease=session: %v, want an error at line %d", err, line)
	}
	if _, err := Parse("x", "x.sql", "-- outboxlab: lease=sessions\n"+body); err == nil || !strings.Contains(err.Error(), "or lease=session") {
		t.Errorf("lease=sessions: %v, want the lease error naming lease=session", err)
	}
}
