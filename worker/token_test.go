package worker

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fence=token through a worker process: the claim's token comes back in
// the response (over the short wire form, tab and newline included), and
// complete and a split renew sent with Request.Token apply for that token
// and not for another. The protocols are sut's testdata/fence.

var tokenProtocols = []struct {
	file  string
	first *regexp.Regexp // the first claim's token
	wrong string         // a token of the same type no claim handed out
}{
	{"token_bigint.sql", regexp.MustCompile(`^1000$`), "1007"},
	{"token_uuid.sql", regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`), "00000000-0000-4000-8000-000000000000"},
	{"token_text.sql", regexp.MustCompile("^tok\t1000\n~end$"), "tok\t1007\n~end"},
}

// splitRenew makes a token protocol's renew two statements, so that it
// can be split: a lock of the row, then the renew.
func splitRenew(src string) string {
	return strings.Replace(src, "-- name: renew\n",
		"-- name: renew\nSELECT id FROM outbox_lab WHERE id = @id::bigint AND @generation::text IS NOT NULL FOR UPDATE;\n", 1)
}

func TestWorkerTokens(t *testing.T) {
	for _, k := range tokenProtocols {
		t.Run(k.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "sut", "testdata", "fence", k.file))
			if err != nil {
				t.Fatal(err)
			}
			inst, w := setup(t, splitRenew(string(b)))
			if !inst.Statements.Token {
				t.Fatal("Statements.Token unset")
			}
			c := do(t, w, Request{Op: "claim"})
			if c.Err != "" || !c.Found || len(c.Rows) != 1 || c.Gen != 0 || !k.first.MatchString(c.Token) || c.Rows[0].Token != c.Token {
				t.Fatalf("claim = %+v, want one row whose token matches %s", c, k.first)
			}

			split := func(token string) Response {
				t.Helper()
				sr := &SplitRequest{Section: "renew", Upto: 1}
				if resp := do(t, w, Request{Op: OpSplit, ID: c.ID, Token: token, Split: sr}); resp.Err != "" {
					t.Fatalf("split renew with token %q: %s", token, resp.Err)
				}
				return do(t, w, Request{Op: OpFinish, ID: c.ID, Token: token, Split: sr})
			}
			if resp := split(k.wrong); resp.Err != "" || resp.Applied {
				t.Errorf("split renew with the wrong token = %+v, want refused", resp)
			}
			if resp := split(c.Token); resp.Err != "" || !resp.Applied {
				t.Errorf("split renew with the claim's token = %+v, want applied", resp)
			}
			if resp := do(t, w, Request{Op: "complete", ID: c.ID, Token: k.wrong}); resp.Err != "" || resp.Applied {
				t.Errorf("complete with the wrong token = %+v, want refused", resp)
			}
			if resp := do(t, w, Request{Op: "complete", ID: c.ID, Token: c.Token}); resp.Err != "" || !resp.Applied {
				t.Errorf("complete with the claim's token = %+v, want applied", resp)
			}
			if got := statuses(t, inst); !strings.HasPrefix(got, "e1:SENT e2:READY") {
				t.Errorf("at the end: %s", got)
			}
		})
	}
}
