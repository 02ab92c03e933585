// Package pdclient is the client of the placement driver (PD): timestamps,
// ids, store registration, heartbeats and region routing.
//
// # Usage
//
//	c, err := pdclient.New(ctx, []string{"127.0.0.1:2379"}) // or add pdclient.WithTSOMode(pdclient.TSOModeParallel)
//	ts, err := c.GetTS(ctx)
//	region, leader, err := c.GetRegion(ctx, key) // leader may be nil
//	defer c.Close()
//
// # Timestamps
//
// GetTS batches: stream workers own the PD Tso streams; a worker collects
// every caller waiting at that moment into one TsoRequest{count: N}, sends it,
// waits for the answer and hands the N consecutive timestamps back in arrival
// order. Each stream has one batch in flight. The TSO mode (WithTSOMode,
// TiDB's tidb_tso_client_rpc_mode) chooses how many streams:
//
//   - TSOModeDefault: one stream. Callers arriving while a batch is in flight
//     wait for it to return and go in the next one (fewest PD requests; a
//     caller waits up to two round trips).
//   - TSOModeParallel: WithTSOStreams streams (4 by default) to the leader,
//     served by separate goroutines on PD; a caller goes out as soon as any
//     stream is idle, so it waits about one round trip.
//
// Callers wait on a pooled per-request channel; no goroutine is started per
// call. Metrics per mode: strata_pdclient_tso_batch_size,
// strata_pdclient_tso_batch_duration_seconds (round trip) and
// strata_pdclient_tso_wait_seconds (what the caller waited).
//
// The client checks monotonicity on every batch (always on): a batch's
// timestamps must be above every timestamp the client delivered before the
// batch was sent (in parallel mode batches on different streams may be
// answered out of order, so this, not "above the last delivered", is the
// invariant). A violation is logged and returned as ErrTSOBackwards, never
// handed out. Hence GetTS returns a timestamp above every timestamp the
// client returned before the call began. When a stream fails (leader change,
// leader stopped), its batch fails internally with ErrTSOUnavailable and
// GetTS sends it again on the next stream (retrying is always safe for
// timestamps), so callers ride through a PD leader change; only after
// tsoRetryTimeout (or when ctx ends) does GetTS return the error. A worker
// reconnects to the member etcd names as leader (GetMembers asked of every
// endpoint at once), else to the next endpoint, with a short backoff (5ms
// doubling to 200ms) while reconnects keep failing.
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
