package concurrent

import (
	"github.com/anishathalye/porcupine"
	"github.com/outboxlab/outboxlab/model"
)

// Mix counts a history's statements by kind and outcome ("Claim claimed",
// "Complete rejected", "Read"), so that `outboxlab bench` can show that its
// raw loop runs the same statements as the driver: an empty claim or a
// rejected complete costs the server less than one that changes a row.
type Mix map[string]int

// MixKey is the key of one statement of kind with outcome out.
func MixKey(kind model.Kind, out model.OutcomeKind) string {
	if out == "" || out == model.OK {
		return string(kind)
	}
	return string(kind) + " " + string(out)
}

// ReadKey is the key of a read of the rows (the state query).
const ReadKey = "Read"

// Add counts every recorded operation of ops.
func (m Mix) Add(ops []porcupine.Operation) {
	for _, op := range ops {
		in, out := op.Input.(Input), op.Output.(Output)
		if in.Observe {
			m[ReadKey]++
			continue
		}
		m[MixKey(in.Op.Kind, out.Out.Kind)]++
	}
}

// Merge adds other's counts to m.
func (m Mix) Merge(other Mix) {
	for k, n := range other {
		m[k] += n
	}
}
