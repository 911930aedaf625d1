package model

import (
	"fmt"
	"strconv"
	"strings"
)

// A program line shows the fence the protocol itself hands out: a
// counter's generation (gen=2), a token's first characters (token=3f2a9c1e),
// or, for a protocol without either, which of the worker's claims of the
// row an outcome is for (claim=2: its second). The model's own count of a
// row's claims is shown only where it is the protocol's, a counter's: a
// line of a token protocol that read "gen=1" named a number the protocol
// never returned.

// FenceKind is which fence a line shows.
type FenceKind int

const (
	ShowGen   FenceKind = iota // the generation, a counter the protocol returns
	ShowNone                   // nothing: the protocol returns no fence
	ShowToken                  // the token's first characters
)

// Fence is how an outcome's op names its claim on a program line.
type Fence struct {
	Kind FenceKind
	// Token is the claim's token, as shown (ShowToken).
	Token string
	// Nth counts the worker's claims of the event (ShowNone): 1 is its
	// first, in the order it received them.
	Nth int
}

// TokenShown is how much of a token a line shows: enough to tell a
// row's claims apart within one program.
const TokenShown = 8

// ShortToken is token as a line shows it.
func ShortToken(token string) string {
	if len(token) > TokenShown {
		return token[:TokenShown]
	}
	return token
}

// suffix is the op's fence argument: ", gen=2", ", token=3f2a9c1e",
// ", claim=2".
func (f Fence) suffix(gen int64) string {
	switch f.Kind {
	case ShowToken:
		return ", token=" + f.Token
	case ShowNone:
		return fmt.Sprintf(", claim=%d", f.Nth)
	}
	return fmt.Sprintf(", gen=%d", gen)
}

// grantFence is a claim line's fence for its i-th row: " gen=2",
// " token=3f2a9c1e", or nothing.
func (o Outcome) grantFence(i int, gen int64) string {
	switch o.Shown {
	case ShowToken:
		if i < len(o.Tokens) {
			return " token=" + o.Tokens[i]
		}
		return " token=?"
	case ShowNone:
		return ""
	}
	return fmt.Sprintf(" gen=%d", gen)
}

// parsedFence is what an op's fence argument said.
type parsedFence struct {
	Fence
	gen int64
}

// parseFence reads "e1, gen=2", "e1, token=3f2a9c1e" or "e1, claim=2".
func parseFence(args string) (event string, f parsedFence, err error) {
	event, arg, ok := strings.Cut(args, ", ")
	if !ok {
		return "", f, fmt.Errorf("no fence")
	}
	name, value, ok := strings.Cut(arg, "=")
	if !ok || value == "" {
		return "", f, fmt.Errorf("fence %q", arg)
	}
	switch name {
	case "gen":
		f.gen, err = strconv.ParseInt(value, 10, 64)
	case "token":
		f.Kind, f.Token = ShowToken, value
	case "claim":
		f.Kind = ShowNone
		f.Nth, err = strconv.Atoi(value)
		if err == nil && f.Nth < 1 {
			err = fmt.Errorf("claim=%d: claims count from 1", f.Nth)
		}
	default:
		return "", f, fmt.Errorf("fence %q", arg)
	}
	return event, f, err
}

// NthClaim is which of its worker's claims of its event c is, from 1.
func (s State) NthClaim(c Claim) int {
	n := 0
	for _, x := range s.Claims {
		if x.Worker == c.Worker && x.Event == c.Event {
			n++
			if x.ID == c.ID {
				return n
			}
		}
	}
	return 0
}
