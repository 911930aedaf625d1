package faults

import "context"

// RequestLost cuts a proxy's client-to-server direction: the next bytes the
// worker sends never reach the server and the connection closes. The worker
// sees a connection error; nothing it asked for ran (an open transaction is
// rolled back when the server ends the backend).
type RequestLost struct{ proxy link }

func (RequestLost) Name() string { return "request_lost" }

func (f RequestLost) Inject(context.Context) (func(), error) {
	return f.proxy.addToxic(cut("request_lost", "upstream"))
}
