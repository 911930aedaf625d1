package outboxlabtest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// keepCounterexample writes a failed run's counterexample into the
// directory OUTBOXLAB_ARTIFACTS names, if it names one: the program with
// its protocol, rule and reproduce line in # headers, the shape of
// outboxlab's testdata/regressions, for a CI job to upload and Replay to
// run. It returns the
// file's path ("" when the variable is unset).
func keepCounterexample(test string, res Result) (string, error) {
	dir := os.Getenv("OUTBOXLAB_ARTIFACTS")
	if dir == "" {
		return "", nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# A counterexample outboxlabtest.Check found in %s.\n", test)
	// The protocol as Replay and outboxlab replay find it: its path.
	protocol := res.Protocol
	if res.Settings != nil {
		protocol = res.Settings.Protocol
	}
	fmt.Fprintf(&b, "# protocol: %s\n# rule: %s\n# reproduce: %s\n", protocol, res.Violation, res.Reproduce)
	for _, line := range res.Counterexample {
		b.WriteString(line + "\n")
	}
	path := filepath.Join(dir, unsafeChars.ReplaceAllString(test, "_")+".txt")
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)
