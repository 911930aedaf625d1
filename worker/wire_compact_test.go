package worker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
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
		{Op: "complete", ID: "3", Token: "1000"}, {Op: "renew", ID: "3", Token: "tok\t1\n~end", MayWait: true},
		{Op: "split", ID: "3", Token: "a\tb", Split: &SplitRequest{Section: "complete", Upto: 1}},
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
		{Found: true, ID: "1", Event: "e1", Token: "t\n1", Rows: []ClaimRow{{ID: "1", Event: "e1", Token: "t\n1"}, {ID: "2", Event: "e2", Token: "\\"}}},
		{Found: true, ID: "1", Event: "e1", Token: "other", Rows: []ClaimRow{{ID: "1", Event: "e1", Token: "t1"}}}, // disagrees with its row
		{Err: "boom", ServerErr: true}, {Err: "timeout", Timeout: true}, {Protocol: true, Err: "two rows"},
		{Timeout: true}, {Relay: &RelayReply{}},
	}
}

func drawnRequests(n int) []Request {
	rng := rand.New(rand.NewPCG(1, 2))
	var out []Request
	for range n {
		out = append(out, Request{Op: drawString(rng), ID: drawString(rng), Gen: rng.Int64N(1<<40) - 1<<39, MayWait: rng.IntN(2) == 0, Token: drawToken(rng)})
	}
	return out
}

func drawnResponses(n int) []Response {
	rng := rand.New(rand.NewPCG(3, 4))
	var out []Response
	for range n {
		r := Response{Applied: rng.IntN(2) == 0, Backend: rng.Uint32(), Timeout: rng.IntN(20) == 0}
		for range rng.IntN(4) {
			r.Rows = append(r.Rows, ClaimRow{ID: drawString(rng), Event: drawString(rng), Gen: rng.Int64N(100), Token: drawToken(rng)})
		}
		if len(r.Rows) > 0 && rng.IntN(10) > 0 {
			first := r.Rows[0]
			r.Found, r.ID, r.Event, r.Gen, r.Token = true, first.ID, first.Event, first.Gen, first.Token
		}
		if rng.IntN(10) == 0 {
			r.Err = drawString(rng)
		}
		out = append(out, r)
	}
	return out
}

// drawToken is "" half the time (a counter protocol's), else a string
// from a wider alphabet: a token is any text, backslashes included.
func drawToken(rng *rand.Rand) string {
	if rng.IntN(2) == 0 {
		return ""
	}
	const alphabet = "a1-\t\n\r\\tn~{\"é "
	var s string
	for range rng.IntN(8) {
		s += string([]rune(alphabet)[rng.IntN(len([]rune(alphabet)))])
	}
	return s
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

// oddTokens are tokens the short form must carry as they are: empty, the
// separators and what escapes them, a uuid, a long one.
var oddTokens = []string{
	"", "0", "-9223372036854775808", "1000",
	"6f1c2b3a-9d4e-4f5a-8b6c-7d8e9f0a1b2c",
	"\t", "\n", "\r", "\r\n", "a\tb\nc", "\\", "\\t", "\\\\n", "tab\\\there", "end\\",
	"~", "~\t1\ttrue", "{\"json\": 1}", " lead and trail ", "naïve café ☕",
	strings.Repeat("x\t", 500),
}

// TestCompactCarriesTokens: every odd token goes in the short form (a
// protocol whose tokens hold a tab is not pushed to JSON), on one line,
// and comes back exactly, in a request and in a claim's rows.
func TestCompactCarriesTokens(t *testing.T) {
	for _, tok := range oddTokens {
		req := Request{Op: "complete", ID: "17", Gen: 0, Token: tok}
		line := encodeRequest(req)
		if line[0] != compactMark || bytes.IndexByte(line, '\n') != len(line)-1 || bytes.Count(line, []byte{'\t'}) != 4 {
			t.Errorf("token %q: request line %q, want one short line of five fields", tok, line)
		}
		if got, err := decodeRequest(trimNewline(line)); err != nil || got != req {
			t.Errorf("token %q: request decoded as %#v, %v", tok, got, err)
		}
		resp := Response{Found: true, ID: "1", Event: "e1", Token: tok, Backend: 3,
			Rows: []ClaimRow{{ID: "1", Event: "e1", Token: tok}, {ID: "2", Event: "e2", Token: tok + "2"}}}
		line = encodeResponse(resp)
		if line[0] != compactMark || bytes.IndexByte(line, '\n') != len(line)-1 {
			t.Errorf("token %q: response line %q, want one short line", tok, line)
		}
		if got, err := decodeResponse(trimNewline(line)); err != nil || !reflect.DeepEqual(got, resp) {
			t.Errorf("token %q: response decoded as %#v, %v; want %#v", tok, got, err, resp)
		}
	}
}

// TestUnescapeRefusesWhatEscapeNeverWrites: a lone or unknown backslash
// sequence is a malformed message, not a token read some other way.
func TestUnescapeRefusesWhatEscapeNeverWrites(t *testing.T) {
	for _, f := range []string{"\\", "a\\", "\\x", "\\T", "\\\\\\"} {
		if got, err := unescape([]byte(f)); err == nil {
			t.Errorf("unescape(%q) = %q, want an error", f, got)
		}
	}
	if _, err := decodeRequest([]byte("~complete\t1\t0\tfalse\tbad\\q")); err == nil {
		t.Error("a request whose token ends in a bad escape decoded")
	}
	if _, err := decodeRequest([]byte("~complete\t1\t0\tfalse")); err == nil {
		t.Error("a request of four fields (no token) decoded")
	}
}
