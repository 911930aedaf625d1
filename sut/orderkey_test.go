package sut

import (
	"slices"
	"testing"
)

func TestOrderKeyOf(t *testing.T) {
	for _, tc := range []struct {
		sql   string
		exprs []string
		from  string
	}{
		{`WITH candidate AS (
    SELECT id FROM outbox_lab
    WHERE (status = 'READY' AND next_attempt_at <= statement_timestamp())
       OR (status = 'INPROGRESS' AND lease_until <= statement_timestamp())
    ORDER BY created_at
    LIMIT 1
    FOR UPDATE SKIP LOCKED
)
UPDATE outbox_lab AS o SET status = 'INPROGRESS' FROM candidate AS c WHERE o.id = c.id
RETURNING o.id, o.event_id, o.generation`, []string{"created_at"}, "outbox_lab"},
		{`SELECT j.id FROM jobs j JOIN queues q ON q.name = j.queue WHERE j.state = 'x, y' ORDER BY j.priority DESC, j.run_at NULLS FIRST, j.id LIMIT 1 FOR UPDATE OF j SKIP LOCKED`,
			[]string{"j.priority", "j.run_at", "j.id"}, "jobs j JOIN queues q ON q.name = j.queue"},
		{`UPDATE t SET a = 1 WHERE id = (SELECT id FROM t -- ORDER BY nothing
  ORDER BY coalesce(b, 'ORDER BY') , id LIMIT 1)`, []string{"coalesce(b, 'ORDER BY')", "id"}, "t"},
	} {
		k, ok := orderKeyOf(tc.sql)
		if !ok || !slices.Equal(k.Exprs, tc.exprs) || k.From != tc.from {
			t.Errorf("orderKeyOf(%.40q...) = %q from %q (%v), want %q from %q", tc.sql, k.Exprs, k.From, ok, tc.exprs, tc.from)
		}
	}
	for _, sql := range []string{
		`UPDATE t SET a = 1 WHERE id = (SELECT id FROM t LIMIT 1)`,
		`SELECT id FROM t ORDER BY $1 LIMIT 1`,
	} {
		if k, ok := orderKeyOf(sql); ok {
			t.Errorf("orderKeyOf(%q) = %+v, want none", sql, k)
		}
	}
}
