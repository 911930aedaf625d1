package outboxlabtest_test

import (
	"fmt"
	"testing"

	"github.com/outboxlab/outboxlab/outboxlabtest"
)

// A test of your own repository: TestMain hands the binary to Main (it
// doubles as the worker processes), and a test checks the protocol file
// holding your claim SQL. The test fails with the shrunk counterexample
// when the protocol breaks a rule.
func ExampleCheck() {
	// In outbox_test.go, beside db/outbox.sql:
	//
	//	func TestMain(m *testing.M) { outboxlabtest.Main(m) }
	testOutboxProtocol := func(t *testing.T) {
		outboxlabtest.Check(t, "db/outbox.sql", outboxlabtest.Workers(3))
	}
	_ = testOutboxProtocol
}

// Run gives the verdict without failing a test: here the article's unsafe
// baseline, whose counterexample shrinks to three steps.
func ExampleRun() {
	res, err := outboxlabtest.Run("baseline", outboxlabtest.Seed(1), outboxlabtest.Faults(false))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Result, res.CounterexampleSteps, "steps")
	// Output: fail 3 steps
}
