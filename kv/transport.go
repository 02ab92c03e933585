package kv

import "time"

// The gRPC transport settings both ends of a SQL node's connection to a
// store use (kvclient dials with them, store/server serves with them).

// StreamWindowSize and ConnWindowSize are the static HTTP/2 flow-control
// windows of store connections (per stream and per connection).
const (
	StreamWindowSize = 16 << 20
	ConnWindowSize   = 64 << 20
)

// KeepaliveTime is how often an idle store connection is pinged; servers
// must allow pings at least this often.
const KeepaliveTime = 2 * time.Second
