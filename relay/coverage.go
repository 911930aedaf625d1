package relay

// Coverage classes of relay mode, counted in --json coverage.
const (
	ClassPublished     = "published"      // records in the log
	ClassRedelivered   = "redelivered"    // records of an event beyond its first
	ClassAckLost       = "ack_lost"       // records in the log whose acknowledgment was lost
	ClassConsumerDedup = "consumer_dedup" // records the consumer found already applied
	ClassKillAfterAck  = "kill_after_ack" // a worker killed between acknowledgment and complete
	ClassPauseAfterAck = "pause_after_ack"
	// ClassStalePublish: a publication by a worker whose claim another
	// claim had already replaced (the article's paused publisher).
	ClassStalePublish  = "stale_publish"
	ClassConsumerCrash = "consumer_crash"
	ClassBrokerRestart = "broker_restart"
)

// RequiredClasses are the classes a pass must have reached, else it is
// inconclusive: a redelivery the consumer absorbed, the article's kill
// between ack and complete, and with faults the lost acknowledgment and
// (on the embedded broker, which can be restarted) the restart too. A
// pause after the ack and a consumer crash are counted, not required: the
// default budget reaches them on most seeds, not on every one.
func RequiredClasses(faults, canRestart bool) []string {
	out := []string{ClassPublished, ClassRedelivered, ClassConsumerDedup, ClassKillAfterAck}
	if faults {
		out = append(out, ClassAckLost)
		if canRestart {
			out = append(out, ClassBrokerRestart)
		}
	}
	return out
}
