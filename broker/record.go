package broker

import (
	"fmt"

	"github.com/outboxlab/outboxlab/broker/payload"
)

// EventIDHeader is the record header that carries the event id
// (payload.EventIDHeader).
const EventIDHeader = payload.EventIDHeader

// Payload is a record's value (payload.Payload).
type Payload = payload.Payload

// DecodePayload reads a record value written by Payload.Encode.
func DecodePayload(b []byte) (Payload, error) { return payload.Decode(b) }

// Record is one record of a topic as the checker reads it back.
type Record struct {
	Offset  int64
	Key     string
	EventID string // the EventIDHeader header, "" when missing
	Payload Payload
}

func (r Record) String() string {
	return fmt.Sprintf("#%d key=%s id=%s %s gen=%d by %s (publication %d)",
		r.Offset, r.Key, r.EventID, r.Payload.Event, r.Payload.Generation, r.Payload.Worker, r.Payload.Serial)
}
