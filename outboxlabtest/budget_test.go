package outboxlabtest_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/outboxlabtest"
)

// TestBadBudgetFails: a bad shard or budget is bad input, reported before
// anything runs, whether it comes from the code or the environment.
func TestBadBudgetFails(t *testing.T) {
	cases := []struct {
		env, value string
		opts       []outboxlabtest.Option
		want       string
	}{
		{"OUTBOXLAB_SHARD", "3/2", small(), "OUTBOXLAB_SHARD"},
		{"OUTBOXLAB_SHARD", "two", small(), "OUTBOXLAB_SHARD"},
		{"", "", []outboxlabtest.Option{outboxlabtest.Shard(0, 2), outboxlabtest.Seed(1)}, "outboxlabtest.Shard"},
		{"", "", []outboxlabtest.Option{outboxlabtest.Shard(1, 2)}, "needs a seed"},
		{"", "", []outboxlabtest.Option{outboxlabtest.Shard(1, 30), outboxlabtest.Seed(1), outboxlabtest.Budget(20, 0)}, "empty"},
		{"RAPID_CHECKS", "0", nil, "at least 1"},
		{"", "", []outboxlabtest.Option{outboxlabtest.Workers(1)}, "Workers(1)"},
	}
	for _, c := range cases {
		if c.env != "" {
			t.Setenv(c.env, c.value)
		}
		_, err := outboxlabtest.Run("leased", c.opts...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s=%q with %d options: error %v, want one naming %q", c.env, c.value, len(c.opts), err, c.want)
		}
		if c.env != "" {
			unsetenv(t, c.env)
		}
	}
}

// TestEnvironmentWinsOverCode: RAPID_CHECKS and OUTBOXLAB_SHARD override
// the options in code, so that CI sets the budget without a change of
// code; the shard runs its part of the budget, from the shared seed.
func TestEnvironmentWinsOverCode(t *testing.T) {
	t.Setenv("RAPID_CHECKS", "10")
	t.Setenv("OUTBOXLAB_SHARD", "2/2")
	res, err := outboxlabtest.Run("leased", outboxlabtest.Seed(3), outboxlabtest.Budget(500, 0), outboxlabtest.Faults(false))
	if err != nil {
		t.Fatal(err)
	}
	total := 10
	if testing.Short() {
		total = 2
	}
	if res.Shard != "2/2" || res.Checks != total-total/2 || res.Seed != 3 {
		t.Fatalf("shard %q ran %d checks from seed %d; want shard 2/2 running %d of %d from seed 3",
			res.Shard, res.Checks, res.Seed, total-total/2, total)
	}
}

func parseSeed(t *testing.T, s string) uint64 {
	seed, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return seed
}

// unsetenv removes a variable t.Setenv set; t.Setenv restores it after.
func unsetenv(t *testing.T, name string) {
	t.Helper()
	if err := os.Unsetenv(name); err != nil {
		t.Fatal(err)
	}
}
