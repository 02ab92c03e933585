package ddl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/sql/catalog"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/tso"
)

var (
	affinitySyncs = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "ddl", Name: "affinity_syncs_total",
		Help: "Changes of PD's affinity groups the DDL owner made for the AFFINITY table option, by outcome (ok, reconciled, error).",
	}, []string{"outcome"})
	jobsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "ddl", Name: "jobs_total",
		Help: "DDL jobs this node ran to their end as owner, by type and outcome (synced, cancelled, rollback done).",
	}, []string{"type", "outcome"})
	jobSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "ddl", Name: "job_duration_seconds",
		Help:    "Time from a DDL job's creation to its end, by type (observed by the owner that ended it).",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 16),
	}, []string{"type"})
	stepSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "ddl", Name: "step_duration_seconds",
		Help:    "Time of one DDL job step (one schema state change, or a whole backfill), by step.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 18),
	}, []string{"step"})
	backfillRows = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "ddl", Name: "backfill_rows_total",
		Help: "Rows backfill batches this node committed, by job type (add index: rows indexed; modify column: rows rewritten).",
	}, []string{"type"})
	backfillBatchSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "ddl", Name: "backfill_batch_seconds",
		Help:    "Time of one committed backfill batch (scan, new keys, checkpoint, commit), by job type.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	}, []string{"type"})
	backfillSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "ddl", Name: "backfill_duration_seconds",
		Help:    "Time of a whole backfill run by this node (from its checkpoint to the last row), by job type.",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 18),
	}, []string{"type"})
	isOwner = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "ddl", Name: "owner",
		Help: "1 while this SQL node is the DDL owner.",
	})
)

// Config configures a DDL.
type Config struct {
	Store   kv.Storage
	Catalog *catalog.Catalog
	// Addr is this node's MySQL address, shown as the owner's address.
	Addr string
	// OwnerTTL is how long an owner lease lasts without renewal (0: 30
	// schema leases, at least 3 s; TiDB's owner session lives 60 s). A
	// dead owner's jobs wait this long (a stopped one resigns at once). It
	// is renewed every third of it: each renewal is a write to the meta
	// region, which wakes it from hibernation for a few seconds.
	OwnerTTL time.Duration
	// SchemaLease is the catalog's lease (0: catalog.DefaultLease).
	SchemaLease time.Duration
	Logger      *slog.Logger
}

// DDL is one SQL node's part in DDL: it submits jobs and, while it is the
// owner, runs them. Safe for concurrent use.
type DDL struct {
	store  kv.Storage
	cat    *catalog.Catalog
	log    *slog.Logger
	nodeID string
	addr   string
	ttl    time.Duration
	// poll is how often an owner looks at the queue within quietAfter of
	// its last job step; idlePoll how often after that (TiDB's owner
	// looks every second). A job submitted on this node wakes it at once.
	// Each look is a scan of the meta region: an idle cluster's SQL node
	// made its leader store the busiest one with ten a second.
	poll, idlePoll time.Duration
	wake           chan struct{} // a job was submitted on this node
	// running: Run was called (this node campaigns).
	running atomic.Bool
	// owner: this node holds the owner lease (as far as Run knows).
	owner atomic.Bool
}

// IsOwner reports whether this node is the DDL owner now. Background work
// that one node of the cluster does (auto-analyze) runs on the owner.
func (d *DDL) IsOwner() bool { return d.owner.Load() }

// New returns a DDL; Run makes it take part in the owner election.
func New(cfg Config) *DDL {
	lease := cfg.SchemaLease
	if lease == 0 {
		lease = catalog.DefaultLease
	}
	ttl := cfg.OwnerTTL
	if ttl == 0 {
		ttl = max(30*lease, 3*time.Second)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &DDL{store: cfg.Store, cat: cfg.Catalog, log: log.With("component", "ddl"),
		nodeID: fmt.Sprintf("%016x", rand.Uint64()), addr: cfg.Addr, ttl: ttl,
		poll: max(lease/10, 10*time.Millisecond), idlePoll: max(lease, 10*time.Millisecond), wake: make(chan struct{}, 1)}
}

// quietAfter: an owner that ran no job step for this long looks at the
// queue every idlePoll instead of every poll.
const quietAfter = 30 * time.Second

// NodeID is this node's id in the owner election.
func (d *DDL) NodeID() string { return d.nodeID }

// txn runs build at a fresh start ts and commits the mutations it returns
// as one transaction (nothing when it returns none).
func (d *DDL) txn(ctx context.Context, build func(start uint64) ([]*kvrpcpb.Mutation, error)) error {
	return kv.Update(ctx, d.store, func(t kv.Txn) error {
		muts, err := build(t.StartTS())
		if err != nil {
			return err
		}
		return kv.Mutate(t, muts)
	})
}

// Submit persists j in the job queue and waits until it ended: nil when it
// is done (every node has loaded its result), else the job's MySQL error
// (e.g. 8214 when it was cancelled). When ctx ends first the job goes on.
func (d *DDL) Submit(ctx context.Context, j *Job) error {
	id, err := d.store.AllocID(ctx, 1)
	if err != nil {
		return fmt.Errorf("ddl: alloc job id: %w", err)
	}
	j.ID, j.State, j.SchemaState = int64(id), StateQueueing, SchemaNone
	err = d.txn(ctx, func(start uint64) ([]*kvrpcpb.Mutation, error) {
		j.CreateMs = tso.Physical(start)
		return []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Insert, Key: queueKey(j.ID), Value: encodeJob(j)}}, nil
	})
	if err != nil {
		return fmt.Errorf("ddl: enqueue %v: %w", j, err)
	}
	d.log.Info("ddl job queued", "job", j.ID, "type", j.Type, "schema", j.SchemaName, "table", j.TableName, "query", j.Query)
	select {
	case d.wake <- struct{}{}:
	default:
	}
	if !d.running.Load() {
		// This node takes no part in the election (in-process tests that
		// never call Run): it runs the queue itself when no owner is alive.
		if err := d.drive(ctx); err != nil {
			return err
		}
	}
	done, err := d.wait(ctx, j.ID)
	if err != nil {
		return err
	}
	if err := d.cat.Load(ctx, done.Version); err != nil {
		return err
	}
	j.RowCount, j.Warnings = done.RowCount, done.Warnings
	return done.Err()
}

// drive runs queued jobs while this node can take the owner lease, until
// the queue is empty. Two sessions of the node may drive at once: a write
// conflict on the lease (or in a step, which carries it) means the other
// one moved; it is tried again after a short backoff, as the owner loop
// retries a failed step.
func (d *DDL) drive(ctx context.Context) error {
	backoff := time.Millisecond
	for {
		won, err := d.campaign(ctx)
		if err == nil && won {
			var worked bool
			if worked, err = d.runOne(ctx); err == nil && !worked {
				return nil
			}
		}
		switch {
		case err == nil && !won:
			return nil
		case err == nil, errors.Is(err, errNotOwner):
			continue
		case errno.FromError(err).Code != errno.ErrWriteConflict:
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 50*time.Millisecond)
	}
}

// wait polls the job history for id with backoff (2 ms doubling to
// 100 ms) and returns the ended job.
func (d *DDL) wait(ctx context.Context, id int64) (*Job, error) {
	backoff := 2 * time.Millisecond
	for {
		ts, err := d.store.GetTS(ctx)
		if err == nil {
			var v []byte
			var found bool
			if v, found, err = kv.GetAt(ctx, d.store, historyKey(id), ts); err == nil && found {
				return decodeJob(v)
			}
		}
		if err != nil && ctx.Err() == nil {
			d.log.Warn("ddl: waiting for a job: reading the job history failed; retrying", "job", id, "err", err)
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}

// Cancel asks the owner to cancel job id (ADMIN CANCEL DDL JOBS): the job
// is marked cancelling in its own transaction; the owner rolls it back at
// its next step and the job's session gets ERROR 8214. Errors: 8224 for an
// unknown job, 8225 for one that ended, 8226 for one past the point where
// it can be undone.
func (d *DDL) Cancel(ctx context.Context, id int64) error {
	return d.txn(ctx, func(start uint64) ([]*kvrpcpb.Mutation, error) {
		v, found, err := kv.GetAt(ctx, d.store, queueKey(id), start)
		if err != nil {
			return nil, err
		}
		if !found {
			if _, done, err := kv.GetAt(ctx, d.store, historyKey(id), start); err != nil {
				return nil, err
			} else if done {
				return nil, errno.New(errno.ErrCancelFinishedDDLJob, "This job:%d is finished, so can't be cancelled", id)
			}
			return nil, errno.New(errno.ErrDDLJobNotFound, "DDL Job:%d not found", id)
		}
		j, err := decodeJob(v)
		if err != nil {
			return nil, err
		}
		if err := cancelErr(j); err != nil {
			return nil, err
		}
		j.State = StateCancelling
		d.log.Info("ddl job cancel requested", "job", j.ID, "type", j.Type, "schema_state", j.SchemaState)
		return []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: queueKey(id), Value: encodeJob(j)}}, nil
	})
}

// Jobs returns the queued and running jobs (oldest first) and the last
// limit ended ones (newest first), read at one timestamp.
func (d *DDL) Jobs(ctx context.Context, limit int) (running, history []*Job, err error) {
	ts, err := d.store.GetTS(ctx)
	if err != nil {
		return nil, nil, err
	}
	pairs, err := kv.ScanAt(ctx, d.store, queuePrefix(), prefixEnd(queuePrefix()), ts, 0)
	if err != nil {
		return nil, nil, err
	}
	for _, kv := range pairs {
		j, err := decodeJob(kv.Value)
		if err != nil {
			return nil, nil, err
		}
		running = append(running, j)
	}
	txn, err := d.store.Begin(ctx, kv.TxnOptions{ReadOnly: true, StartTS: ts})
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = txn.Rollback(context.WithoutCancel(ctx)) }()
	hp, err := txn.Scan(ctx, historyPrefix(), prefixEnd(historyPrefix()), limit, true)
	if err != nil {
		return nil, nil, err
	}
	for _, kv := range hp {
		j, err := decodeJob(kv.Value)
		if err != nil {
			return nil, nil, err
		}
		history = append(history, j)
	}
	return running, history, nil
}

// OwnerInfo is the current DDL owner (ADMIN SHOW DDL).
type OwnerInfo struct {
	NodeID, Addr string
	Expired      bool // the lease ran out: the next node to campaign takes over
}

// Owner reads the owner lease; ok is false when there is none.
func (d *DDL) Owner(ctx context.Context) (o OwnerInfo, ok bool, err error) {
	ts, err := d.store.GetTS(ctx)
	if err != nil {
		return o, false, err
	}
	row, found, err := d.readOwner(ctx, ts)
	if err != nil || !found {
		return o, false, err
	}
	return OwnerInfo{NodeID: row.Node, Addr: row.Addr, Expired: row.ExpiresMs <= tso.Physical(ts)}, true, nil
}

// ownerRow is the owner lease ('m' DDLOwner).
type ownerRow struct {
	Node      string `json:"node"`
	Addr      string `json:"addr"`
	ExpiresMs int64  `json:"expires_ms"` // PD clock (TSO physical time)
}

func (d *DDL) readOwner(ctx context.Context, ts uint64) (ownerRow, bool, error) {
	var row ownerRow
	v, found, err := kv.GetAt(ctx, d.store, ownerKey(), ts)
	if err != nil || !found {
		return row, false, err
	}
	if err := json.Unmarshal(v, &row); err != nil {
		return row, false, fmt.Errorf("ddl: corrupt owner row: %w", err)
	}
	return row, true, nil
}

// errNotOwner: another node holds the owner lease (or this node's ran
// out): the job step was not committed.
var errNotOwner = errors.New("ddl: this node is not the DDL owner")

// fence returns the write that renews this node's owner lease, or
// errNotOwner when the lease at start is not this node's, or expired.
// Every transaction of a job step carries it, so a step commits only while
// this node is the owner: a node that took over wrote the same key after
// start, and the step fails with a write conflict.
func (d *DDL) fence(ctx context.Context, start uint64) (*kvrpcpb.Mutation, error) {
	row, found, err := d.readOwner(ctx, start)
	if err != nil {
		return nil, err
	}
	if !found || row.Node != d.nodeID || row.ExpiresMs <= tso.Physical(start) {
		return nil, errNotOwner
	}
	return d.leaseMutation(start), nil
}

func (d *DDL) leaseMutation(start uint64) *kvrpcpb.Mutation {
	v, _ := json.Marshal(ownerRow{Node: d.nodeID, Addr: d.addr, ExpiresMs: tso.Physical(start) + d.ttl.Milliseconds()})
	return &kvrpcpb.Mutation{Op: kvrpcpb.Op_Put, Key: ownerKey(), Value: v}
}

// campaign takes the owner lease when it is free or expired, or renews it
// when it is this node's; it reports whether this node is the owner.
func (d *DDL) campaign(ctx context.Context) (bool, error) {
	owner := false
	err := d.txn(ctx, func(start uint64) ([]*kvrpcpb.Mutation, error) {
		row, found, err := d.readOwner(ctx, start)
		if err != nil {
			return nil, err
		}
		if found && row.Node != d.nodeID && row.ExpiresMs > tso.Physical(start) {
			return nil, nil
		}
		owner = true
		return []*kvrpcpb.Mutation{d.leaseMutation(start)}, nil
	})
	if err != nil {
		return false, err
	}
	return owner, nil
}

// resign gives the lease up (graceful stop), so another node takes over
// at once instead of after the TTL.
func (d *DDL) resign(ctx context.Context) error {
	return d.txn(ctx, func(start uint64) ([]*kvrpcpb.Mutation, error) {
		row, found, err := d.readOwner(ctx, start)
		if err != nil || !found || row.Node != d.nodeID {
			return nil, err
		}
		return []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Del, Key: ownerKey()}}, nil
	})
}

// Run campaigns for the owner lease and, while this node owns it, runs the
// queued jobs one at a time in id order, until ctx is done; then it gives
// the lease up. One goroutine does both: every committed job step renews
// the lease, and Run renews it between steps.
func (d *DDL) Run(ctx context.Context) {
	d.running.Store(true)
	defer func() {
		isOwner.Set(0)
		d.owner.Store(false)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		if err := d.resign(rctx); err != nil {
			d.log.Warn("ddl: giving up the owner lease failed; another node takes over when it expires", "err", err, "ttl", d.ttl)
		}
	}()
	owner := false
	var renewed time.Time    // when the last campaign that won was sent
	var stepped time.Time    // when this node last ran a job step
	var reconciled time.Time // when this owner last reconciled the affinity groups (zero: not yet)
	for ctx.Err() == nil {
		if !owner || time.Since(renewed) > d.ttl/3 {
			sent := time.Now()
			won, err := d.campaign(ctx)
			switch {
			case err != nil && ctx.Err() == nil:
				var wc *kv.WriteConflictError
				if errors.As(err, &wc) { // another node campaigned at the same time
					d.log.Debug("ddl: owner campaign lost a race", "err", err)
				} else {
					d.log.Warn("ddl: owner campaign failed", "err", err)
				}
			case won:
				renewed = sent
			}
			if won != owner && err == nil {
				owner = won
				if won {
					isOwner.Set(1)
					d.owner.Store(true)
					d.log.Info("ddl: this node is the DDL owner", "node", d.nodeID, "ttl", d.ttl)
					reconciled = time.Time{}
				} else {
					isOwner.Set(0)
					d.owner.Store(false)
					d.log.Info("ddl: this node lost the DDL owner lease", "node", d.nodeID)
				}
			}
			if owner && err != nil && time.Since(renewed) > d.ttl {
				owner = false
				isOwner.Set(0)
				d.owner.Store(false)
			}
		}
		if owner && time.Since(reconciled) > affinityReconcileInterval {
			if err := d.reconcileAffinity(ctx); err != nil && ctx.Err() == nil {
				d.log.Warn("ddl: reconciling PD's affinity groups with the catalog failed; retrying later", "err", err)
			}
			reconciled = time.Now()
		}
		if owner {
			worked, err := d.runOne(ctx)
			switch {
			case errors.Is(err, errNotOwner):
				owner = false
				isOwner.Set(0)
				d.owner.Store(false)
				d.log.Info("ddl: this node is no longer the DDL owner", "node", d.nodeID)
				continue
			case err != nil && ctx.Err() == nil:
				d.log.Warn("ddl: job step failed; retrying", "err", err)
				worked = false // back off below
			}
			if worked {
				stepped = time.Now()
				continue
			}
		}
		wait := d.poll
		switch {
		case !owner:
			wait = d.ttl / 6
		case time.Since(stepped) > quietAfter:
			wait = d.idlePoll
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-d.wake:
		case <-t.C:
		}
		t.Stop()
	}
}
