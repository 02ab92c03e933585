// Package pdclient is the client of the placement driver (PD): timestamps,
// ids, store registration, heartbeats and region routing.
//
// # Usage
//
//	c, err := pdclient.New(ctx, []string{"127.0.0.1:2379"})
//	ts, err := c.GetTS(ctx)
//	region, leader, err := c.GetRegion(ctx, key) // leader may be nil
//	defer c.Close()
//
// # Timestamps
//
// GetTS batches: one goroutine per Client owns the PD Tso stream; it collects
// every caller waiting at that moment into one TsoRequest{count: N} and hands
// the N consecutive timestamps back in arrival order. Up to maxInflight
// batches may be outstanding on the stream (responses arrive in order), so a
// caller waits about one round trip, not a full batch cycle. Callers wait on a
// pooled per-request channel; no goroutine is started per call.
//
// The client checks that timestamps are strictly increasing across all
// batches and reconnections; a violation is logged and returned as
// ErrTSOBackwards, never handed out. When the stream fails (leader change,
// leader stopped), the batches in flight fail internally with
// ErrTSOUnavailable and GetTS sends them again on the next stream (retrying
// is always safe for timestamps), so callers ride through a PD leader change;
// only after tsoRetryTimeout (or when ctx ends) does GetTS return the error.
// The client reconnects to the member etcd names as leader (GetMembers asked
// of every endpoint at once), else to the next endpoint, with a short
// backoff (5ms doubling to 200ms) while reconnects keep failing.
//
// # Unary calls
//
// Unary calls go to the endpoint believed to be the leader; on a connection
// error or NOT_LEADER answer they go to the leader named by GetMembers, then
// walk the endpoints, backing off once all endpoints were tried, until ctx is
// done. Each attempt is bounded by
// attemptTimeout so a hung member does not stall the caller forever.
//
// # Concurrency
//
// All methods are safe for concurrent use. Returned protobuf messages are
// owned by the caller.
package pdclient
