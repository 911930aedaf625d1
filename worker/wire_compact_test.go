package worker

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
)

// The short wire form must be indistinguishable from JSON: every request
// and response the parent and the worker exchange decodes to what the JSON
// encoding would have given. Checked on hand-picked messages (each edge of
// compactable) and on 20,000 drawn ones; and shown to catch a short form
// that takes a response whose Found and ID disagree with its first row
// (mutant looseCompactable), which would change what a one-row reader sees.

func TestCompactRequestsRoundTrip(t *testing.T) {
	for _, req := range append(sampleRequests(), drawnRequests(10000)...) {
		want := viaJSON(req)
		got, err := decodeRequest(trimNewline(encodeRequest(req)))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("request %#v: decoded %#v, %v; JSON gives %#v", req, got, err, want)
		}
	}
}

func TestCompactResponsesRoundTrip(t *testing.T) {
	if bad := responseMismatch(encodeResponse, append(sampleResponses(), drawnResponses(10000)...)); bad != "" {
		t.Fatal(bad)
	}
	// Mutant: the short form without its consistency check on Found, ID,
	// Event and Gen. The same check must reject it.
	loose := func(resp Response) []byte { return encodeResponseIf(resp, looseCompactable(resp)) }
	if responseMismatch(loose, sampleResponses()) == "" {
		t.Fatal("mutant looseCompactable passed the round trip")
	}
}

// responseMismatch is the first response that encode and decodeResponse do
// not carry as JSON would, described; "" when there is none.
func responseMismatch(encode func(Response) []byte, cases []Response) string {
	for _, resp := range cases {
		want := viaJSON(resp)
		got, err := decodeResponse(trimNewline(encode(resp)))
		if err != nil || !reflect.DeepEqual(got, want) {
			return fmt.Sprintf("response %#v: decoded %#v, %v; JSON gives %#v", resp, got, err, want)
		}
	}
	return ""
}

// looseCompactable is compactable without the rows' agreement with Found,
// ID, Event and Gen.
func looseCompactable(resp Response) bool {
	return resp.Relay == nil && resp.Err == "" && !resp.ServerErr && !resp.Protocol && !resp.Timeout
}

func viaJSON[T any](v T) T {
	b, _ := json.Marshal(v)
	var out T
	json.Unmarshal(b, &out)
	return out
}

func trimNewline(b []byte) []byte { return b[:len(b)-1] }

func sampleRequests() []Request {
	return []Request{
		{Op: "claim"}, {Op: "complete", ID: "17", Gen: 3}, {Op: "renew", ID: "x", Gen: -2, MayWait: true},
		{Op: "complete", ID: "a\tb", Gen: 1}, {Op: "retry", ID: "line\nbreak"}, {Op: "complete", ID: "{json"},
		{Op: "publish", Relay: &RelayRequest{}}, {Op: ""},
	}
}

func sampleResponses() []Response {
	row := func(id, ev string, gen int64) ClaimRow { return ClaimRow{ID: id, Event: ev, Gen: gen} }
	return []Response{
		{}, {Backend: 4242}, {Applied: true, Backend: 1},
		{Found: true, ID: "1", Event: "e1", Gen: 2, Rows: []ClaimRow{row("1", "e1", 2)}, Backend: 7},
		{Found: true, ID: "1", Event: "e1", Gen: 2, Rows: []ClaimRow{row("1", "e1", 2), row("2", "e2", 1)}},
		{Found: true, ID: "9", Event: "e1", Gen: 2, Rows: []ClaimRow{row("1", "e1", 2)}}, // disagrees with its row
		{Found: false, Rows: []ClaimRow{row("1", "e1", 2)}},
		{Found: true, ID: "1"},
		{Rows: []ClaimRow{}},
		{Found: true, ID: "a\tb", Event: "e1", Rows: []ClaimRow{row("a\tb", "e1", 0)}},
		{Err: "boom", ServerErr: true}, {Err: "timeout", Timeout: true}, {Protocol: true, Err: "two rows"},
		{Timeout: true}, {Relay: &RelayReply{}},
	}
}

func drawnRequests(n int) []Request {
	rng := rand.New(rand.NewPCG(1, 2))
	var out []Request
	for range n {
		out = append(out, Request{Op: drawString(rng), ID: drawString(rng), Gen: rng.Int64N(1<<40) - 1<<39, MayWait: rng.IntN(2) == 0})
	}
	return out
}

func drawnResponses(n int) []Response {
	rng := rand.New(rand.NewPCG(3, 4))
	var out []Response
	for range n {
		r := Response{Applied: rng.IntN(2) == 0, Backend: rng.Uint32(), Timeout: rng.IntN(20) == 0}
		for range rng.IntN(4) {
			r.Rows = append(r.Rows, ClaimRow{ID: drawString(rng), Event: drawString(rng), Gen: rng.Int64N(100)})
		}
		if len(r.Rows) > 0 && rng.IntN(10) > 0 {
			r.Found, r.ID, r.Event, r.Gen = true, r.Rows[0].ID, r.Rows[0].Event, r.Rows[0].Gen
		}
		if rng.IntN(10) == 0 {
			r.Err = drawString(rng)
		}
		out = append(out, r)
	}
	return out
}

// drawString is a short string, now and then with a tab, a newline, a
// quote, a brace or the short form's mark in it.
func drawString(rng *rand.Rand) string {
	const alphabet = "ae19-\t\n\"{}~\\ é"
	s := strconv.Itoa(rng.IntN(1000))
	for range rng.IntN(4) {
		s += string([]rune(alphabet)[rng.IntN(len([]rune(alphabet)))])
	}
	return s
}
