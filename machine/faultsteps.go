package machine

import (
	"pgregory.net/rapid"
)

// networkFault and dbRestart are filled in with the faults issue.
func (r *run) networkFault(t *rapid.T, replyLost bool) { t.Skip("no faults") }

func (r *run) dbRestart(t *rapid.T) { t.Skip("no faults") }
