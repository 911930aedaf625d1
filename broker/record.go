package broker

import (
	"encoding/json"
	"fmt"
)

// EventIDHeader is the record header that carries the event id the claim
// returned: the stable identity a consumer deduplicates by.
const EventIDHeader = "outboxlab-event-id"

// Payload is a record's value. Event is the outbox row the publication
// came from (the checker's ground truth, whatever key and header say);
// Generation the claim's; Serial is unique to one publication in a run,
// so that a record read back names the very publish that wrote it.
type Payload struct {
	Event      string `json:"event"`
	Generation int64  `json:"generation"`
	Worker     string `json:"worker"`
	Serial     int    `json:"serial"`
}

// Encode is the payload as the record value.
func (p Payload) Encode() []byte {
	b, _ := json.Marshal(p)
	return b
}

// DecodePayload reads a record value written by Encode.
func DecodePayload(b []byte) (Payload, error) {
	var p Payload
	if err := json.Unmarshal(b, &p); err != nil {
		return Payload{}, fmt.Errorf("record value %q is not an outboxlab payload: %w", b, err)
	}
	return p, nil
}

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
