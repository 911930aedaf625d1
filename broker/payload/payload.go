// Package payload is the value of a record relay mode publishes and the
// header it rides with: what a worker process puts on the wire to the
// harness, apart from the broker client (package broker), so that the
// worker package links no Kafka client.
package payload

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

// Decode reads a record value written by Encode.
func Decode(b []byte) (Payload, error) {
	var p Payload
	if err := json.Unmarshal(b, &p); err != nil {
		return Payload{}, fmt.Errorf("record value %q is not an outboxlab payload: %w", b, err)
	}
	return p, nil
}
