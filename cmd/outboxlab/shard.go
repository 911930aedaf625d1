package main

import (
	"errors"

	"github.com/outboxlab/outboxlab/search"
)

// shardFlag is --shard K/N: part K of N of the budget (search.Shard says
// which checks). A bad K/N is a flag error, exit status 2.
type shardFlag struct{ search.Shard }

func (f *shardFlag) String() string {
	if f.N == 0 {
		return ""
	}
	return f.Shard.String()
}

func (f *shardFlag) Set(s string) error {
	sh, err := search.ParseShard(s)
	if err != nil {
		return err
	}
	f.Shard = sh
	return nil
}

// validate refuses a shard without a seed: every shard of one run must
// start from the same seed, or their checks are not one budget.
func (f *shardFlag) validate(seed uint64) error {
	if f.N != 0 && seed == 0 {
		return errors.New("--shard needs --seed: every shard of a run starts from the same seed")
	}
	return nil
}
