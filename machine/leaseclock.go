package machine

import "time"

// leaseClock keeps when each event's lease was granted, by the harness's
// clock: the latest grant (a claim's rows, an applied renew) and the
// first, which counts once a step may have rewound the server, since a
// lease a rewind brought back runs from a grant older than the latest.
// The grant's time is when its step began, no later than the server's
// now() in it. It knows nothing of the model or the server: it is what
// the age fixture (agetime.go) and the clock's allowance (clock.go) read
// of time.
type leaseClock struct {
	latest, first map[string]time.Time
	// rewound is set once a step may have rewound the server.
	rewound bool
	// stepStart is when the step in progress began.
	stepStart time.Time
}

// startStep marks the start of a step: a lease it grants is granted then.
func (c *leaseClock) startStep() { c.stepStart = time.Now() }

// granted records that the step in progress granted events' leases.
func (c *leaseClock) granted(events []string) {
	if c.latest == nil {
		c.latest, c.first = map[string]time.Time{}, map[string]time.Time{}
	}
	for _, e := range events {
		c.latest[e] = c.stepStart
		if _, ok := c.first[e]; !ok {
			c.first[e] = c.stepStart
		}
	}
}

// grantedAt is when event's lease counts as granted: its latest grant, or
// its first once the server may have rewound; zero when none was seen.
func (c *leaseClock) grantedAt(event string) time.Time {
	if c.rewound {
		return c.first[event]
	}
	return c.latest[event]
}

// age is how long ago event's lease was granted (grantedAt); false when
// no grant was seen (a replay's setup granted it).
func (c *leaseClock) age(event string) (time.Duration, bool) {
	at := c.grantedAt(event)
	if at.IsZero() {
		return 0, false
	}
	return time.Since(at), true
}

// spent reports whether event's lease, granted for lease (40% of it left
// after an Age: aged), may have run out by now. A lease whose grant was
// not seen is not.
func (c *leaseClock) spent(event string, lease time.Duration, aged bool) bool {
	age, seen := c.age(event)
	if !seen {
		return false
	}
	if aged {
		lease = lease * 4 / 10
	}
	return age >= lease
}

// within reports whether less than window has passed since event's lease
// was granted; true when its grant was not seen.
func (c *leaseClock) within(event string, window time.Duration) bool {
	age, seen := c.age(event)
	return !seen || age < window
}
