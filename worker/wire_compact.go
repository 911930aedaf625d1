package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// The hot messages travel as one line of tab-separated fields after a '~'
// rather than as JSON: encoding and decoding JSON were about a quarter of
// the parent's cost of sending an operation and reading its answer, and a
// twelfth of the worker's CPU (pprof of `outboxlab bench --only
// concurrent`). A message
// the short form cannot carry exactly (a relay part, an error's text, an
// id or event with a tab or a newline) goes as JSON, and each side reads
// both: a line starting with '{' is JSON. A fence=token token is arbitrary
// text, so the short form escapes it (appendEscaped) rather than give up
// on every message of a protocol whose tokens hold a tab.
const compactMark = '~'

var errCompact = errors.New("malformed compact message")

// encodeRequest is req as one line, its newline included.
func encodeRequest(req Request) []byte {
	if req.Relay != nil || req.Drive != nil || req.Split != nil || !plain(req.Op) || !plain(req.ID) {
		b, _ := json.Marshal(req)
		return append(b, '\n')
	}
	b := make([]byte, 0, 48)
	b = append(b, compactMark)
	b = append(b, req.Op...)
	b = append(b, '\t')
	b = append(b, req.ID...)
	b = append(b, '\t')
	b = strconv.AppendInt(b, req.Gen, 10)
	b = append(b, '\t')
	b = strconv.AppendBool(b, req.MayWait)
	b = append(b, '\t')
	b = appendEscaped(b, req.Token)
	return append(b, '\n')
}

func decodeRequest(line []byte) (Request, error) {
	var req Request
	if len(line) == 0 || line[0] != compactMark {
		err := json.Unmarshal(line, &req)
		return req, err
	}
	f := bytes.Split(line[1:], []byte{'\t'})
	if len(f) != 5 {
		return req, errCompact
	}
	gen, err1 := strconv.ParseInt(string(f[2]), 10, 64)
	wait, err2 := strconv.ParseBool(string(f[3]))
	token, err3 := unescape(f[4])
	if err1 != nil || err2 != nil || err3 != nil {
		return req, errCompact
	}
	return Request{Op: string(f[0]), ID: string(f[1]), Gen: gen, MayWait: wait, Token: token}, nil
}

// encodeResponse is resp as one line, its newline included. The short
// form is a statement's answer with no error: the backend, applied, and
// the claimed rows (Found, ID, Event, Gen and Token are the first row's).
func encodeResponse(resp Response) []byte { return encodeResponseIf(resp, compactable(resp)) }

// encodeResponseIf writes the short form when short, else JSON.
func encodeResponseIf(resp Response, short bool) []byte {
	if !short {
		b, _ := json.Marshal(resp)
		return append(b, '\n')
	}
	b := make([]byte, 0, 64)
	b = append(b, compactMark)
	b = strconv.AppendUint(b, uint64(resp.Backend), 10)
	b = append(b, '\t')
	b = strconv.AppendBool(b, resp.Applied)
	b = append(b, '\t')
	b = strconv.AppendInt(b, int64(len(resp.Rows)), 10)
	for _, r := range resp.Rows {
		b = append(b, '\t')
		b = append(b, r.ID...)
		b = append(b, '\t')
		b = append(b, r.Event...)
		b = append(b, '\t')
		b = strconv.AppendInt(b, r.Gen, 10)
		b = append(b, '\t')
		b = appendEscaped(b, r.Token)
	}
	return append(b, '\n')
}

// compactable reports whether the short form carries resp exactly.
func compactable(resp Response) bool {
	if resp.Relay != nil || resp.Drive != nil || resp.Err != "" || resp.ServerErr || resp.Protocol || resp.Timeout {
		return false
	}
	if len(resp.Rows) == 0 {
		return resp.Rows == nil && !resp.Found && resp.ID == "" && resp.Event == "" && resp.Gen == 0 && resp.Token == ""
	}
	first := resp.Rows[0]
	if !resp.Found || resp.ID != first.ID || resp.Event != first.Event || resp.Gen != first.Gen || resp.Token != first.Token {
		return false
	}
	for _, r := range resp.Rows {
		if !plain(r.ID) || !plain(r.Event) {
			return false
		}
	}
	return true
}

func decodeResponse(line []byte) (Response, error) {
	var resp Response
	if len(line) == 0 || line[0] != compactMark {
		err := json.Unmarshal(line, &resp)
		return resp, err
	}
	f := bytes.Split(line[1:], []byte{'\t'})
	if len(f) < 3 {
		return resp, errCompact
	}
	backend, err1 := strconv.ParseUint(string(f[0]), 10, 32)
	applied, err2 := strconv.ParseBool(string(f[1]))
	n, err3 := strconv.Atoi(string(f[2]))
	const perRow = 4 // id, event, gen, token
	if err1 != nil || err2 != nil || err3 != nil || n < 0 || len(f) != 3+perRow*n {
		return resp, errCompact
	}
	resp.Backend, resp.Applied = uint32(backend), applied
	for i := range n {
		r := f[3+perRow*i:]
		gen, err1 := strconv.ParseInt(string(r[2]), 10, 64)
		token, err2 := unescape(r[3])
		if err1 != nil || err2 != nil {
			return Response{}, errCompact
		}
		resp.Rows = append(resp.Rows, ClaimRow{ID: string(r[0]), Event: string(r[1]), Gen: gen, Token: token})
	}
	if n > 0 {
		first := resp.Rows[0]
		resp.Found, resp.ID, resp.Event, resp.Gen, resp.Token = true, first.ID, first.Event, first.Gen, first.Token
	}
	return resp, nil
}

// plain is a field the short form can carry: no tab, no newline.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '\t' || s[i] == '\n' || s[i] == '\r' {
			return false
		}
	}
	return true
}

// appendEscaped appends s as one field: a backslash, a tab, a newline and
// a carriage return become \\, \t, \n and \r, so that no byte of s ends
// the field or the line. Most tokens have none of them and are copied.
func appendEscaped(b []byte, s string) []byte {
	if plain(s) && strings.IndexByte(s, '\\') < 0 {
		return append(b, s...)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b = append(b, '\\', '\\')
		case '\t':
			b = append(b, '\\', 't')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, c)
		}
	}
	return b
}

// unescape reads a field appendEscaped wrote; any other backslash
// sequence, or a backslash at the end, is malformed.
func unescape(f []byte) (string, error) {
	if bytes.IndexByte(f, '\\') < 0 {
		return string(f), nil
	}
	out := make([]byte, 0, len(f))
	for i := 0; i < len(f); i++ {
		if f[i] != '\\' {
			out = append(out, f[i])
			continue
		}
		if i++; i == len(f) {
			return "", errCompact
		}
		switch f[i] {
		case '\\':
			out = append(out, '\\')
		case 't':
			out = append(out, '\t')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		default:
			return "", errCompact
		}
	}
	return string(out), nil
}
