package sut

// Defaults for the optional sections, for protocols that keep the article's
// outbox_lab table. A protocol with another table supplies its own.
const (
	defaultEnqueue = `INSERT INTO outbox_lab (event_id) VALUES (@event_id)`

	defaultExpire = `UPDATE outbox_lab
SET lease_until = statement_timestamp() - interval '1 second'
WHERE id = @id AND status = 'INPROGRESS'`

	defaultDue = `UPDATE outbox_lab
SET next_attempt_at = statement_timestamp() - interval '1 second'
WHERE id = @id`

	defaultAge = `UPDATE outbox_lab
SET lease_until = lease_until - make_interval(secs => @seconds)
WHERE id = @id AND status = 'INPROGRESS'`

	defaultStateWithGeneration = `SELECT id, event_id, status, generation,
       CASE WHEN lease_until IS NULL THEN NULL
            ELSE lease_until <= statement_timestamp() END AS lease_expired,
       next_attempt_at <= statement_timestamp() AS due
FROM outbox_lab ORDER BY id`

	defaultStateWithoutGeneration = `SELECT id, event_id, status,
       CASE WHEN lease_until IS NULL THEN NULL
            ELSE lease_until <= statement_timestamp() END AS lease_expired,
       next_attempt_at <= statement_timestamp() AS due
FROM outbox_lab ORDER BY id`
)

func (p *Protocol) addDefaults() {
	defaults := map[string]string{Enqueue: defaultEnqueue, Expire: defaultExpire, Due: defaultDue, Age: defaultAge}
	if p.SessionLease {
		delete(defaults, Expire) // the suite ends the session instead
		delete(defaults, Age)
	}
	for name, sql := range defaults {
		if p.Sections[name] == nil {
			p.Sections[name] = &Section{Name: name, SQL: sql, Line: 1, Default: true}
		}
	}
	// The default state query depends on whether the claim returns a
	// generation, which only the server can tell: Install fills it in. The
	// default age is tentative: Install drops it when the server rejects it
	// (a protocol on a table of its own), since age is optional.
}
