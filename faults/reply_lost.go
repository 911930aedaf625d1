package faults

import "context"

// ReplyLost cuts a proxy's server-to-client direction: the next statement
// reaches the server, runs and (in autocommit, or a COMMIT) commits, and its
// reply is dropped as the connection closes. The worker sees the same
// connection error as for a lost request and cannot tell the two apart.
// The statement must be one round trip for that (the worker prepares its
// statements when it connects): the reply lost is then the statement's own.
type ReplyLost struct{ proxy link }

func (ReplyLost) Name() string { return "reply_lost" }

func (f ReplyLost) Inject(context.Context) (func(), error) {
	return f.proxy.addToxic(cut("reply_lost", "downstream"))
}
