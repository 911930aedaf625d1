package relay

import (
	"fmt"

	"github.com/outboxlab/outboxlab/worker"
)

// Options are how the relay and its consumer behave. The zero value is
// the correct pipeline; each other field is a mistake the checker must
// catch (see Variants).
type Options struct {
	// KeyWithGeneration keys each record (and its event id header) by the
	// event id and the claim's generation, so every republication looks
	// like a new event downstream.
	KeyWithGeneration bool
	// CompleteBeforePublish records SENT first and publishes after, so a
	// worker that dies in between loses the event.
	CompleteBeforePublish bool
	// Consumer holds the consumer's variants (dedup by generation,
	// offset commit before apply).
	Consumer worker.ConsumerOptions
}

// Variant is a named broken pipeline and the rule that must catch it.
type Variant struct {
	Name string
	Opts Options
	Rule string
}

// Variants are the broken pipelines of issue 14's evidence.
var Variants = []Variant{
	{"key_with_generation", Options{KeyWithGeneration: true}, RuleSameEventID},
	{"complete_before_publish", Options{CompleteBeforePublish: true}, RulePublishedBeforeComplete},
	{"consumer_dedup_by_generation", Options{Consumer: worker.ConsumerOptions{DedupByGeneration: true}}, RuleAppliedOnce},
	{"consumer_commit_before_apply", Options{Consumer: worker.ConsumerOptions{CommitBeforeApply: true}}, RuleNoEventLost},
}

// VariantNamed finds a variant by name.
func VariantNamed(name string) (Variant, error) {
	for _, v := range Variants {
		if v.Name == name {
			return v, nil
		}
	}
	return Variant{}, fmt.Errorf("unknown relay variant %q", name)
}

// recordKey is the key and event id header of a record of event's claim.
func (o Options) recordKey(event string, gen int64) string {
	if o.KeyWithGeneration {
		return fmt.Sprintf("%s/%d", event, gen)
	}
	return event
}
