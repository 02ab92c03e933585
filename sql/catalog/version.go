package catalog

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/stratadb/strata/failpoint"
	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kv/codec"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/tso"
)

// DefaultLease is the schema lease: a SQL node uses its cached schema for at
// most this long after it last confirmed the cluster's schema version, and a
// schema change that invalidates the previous schema waits 2 leases before
// it returns (or moves to its next state), so that by then every node runs
// the new version or has stopped serving. TiDB's default is 45 s; checking
// the version costs one TSO and one point get, so ours is short.
const DefaultLease = time.Second

// historyLen is how many versions' diffs are kept for commit checks; a
// transaction that began more versions ago than this fails with 8028.
const historyLen = 256

// maxDDLRetries bounds how often a schema change is retried when another
// one bumped the version between its read and its commit.
const maxDDLRetries = 20

var (
	schemaVersionGauge = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "sql", Name: "schema_version",
		Help: "Schema version this SQL node has loaded.",
	})
	schemaReloads = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "sql", Name: "schema_version_checks_total",
		Help: "Schema version checks by outcome (unchanged, changed, error).",
	}, []string{"outcome"})
	schemaCheckSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "sql", Name: "schema_version_check_seconds",
		Help:    "Time to read the cluster's schema version (TSO + point get).",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
	})
	schemaChangedAborts = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "sql", Name: "schema_changed_commits_total",
		Help: "Commits refused with 8028 because a table they wrote changed schema.",
	})
	schemaCommitRechecks = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "sql", Name: "schema_commit_rechecks_total",
		Help: "Commits whose commit_ts passed the schema lease window and were checked again at it, by outcome (allowed, refused, error).",
	}, []string{"outcome"})
	schemaSyncWaitSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "sql", Name: "schema_sync_wait_seconds",
		Help:    "Time a schema change waited for every live SQL node to load its version.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	})
)

func versionKey() []byte { return metaPrefix("SchemaVersion") }

func diffKey(v int64) []byte { return codec.EncodeInt(metaPrefix("SchemaDiff"), v) }

// schemaDiff is what one version changed: the ids of the tables whose
// definition a transaction that began before it must not write under,
// unless the change is Compatible: an index or column state step (F1's
// states), or a column change rows decode the same under (a rename, a
// default), which a transaction that began one version before may span.
type schemaDiff struct {
	Version    int64   `json:"version"`
	TableIDs   []int64 `json:"table_ids"`
	Compatible bool    `json:"compatible,omitempty"`
}

// TxnSchema is the schema version a running transaction began at, held
// from TxnBegin to TxnEnd: a node reports a version to the schema syncer
// only once no transaction that began before it still runs (TiDB's
// metadata lock), so a DDL step waits for them instead of failing them.
type TxnSchema struct {
	version int64
	n       atomic.Int64
	// lapsed: this node's sync row expired while the transaction ran, so
	// the DDL owner may have stopped waiting for it (CheckCommit fails).
	lapsed atomic.Bool
}

// Version is the schema version the transaction began at.
func (t *TxnSchema) Version() int64 { return t.version }

// TxnBegin registers a transaction beginning at the loaded version; call
// TxnEnd when it ends. Lock-free (two atomic operations).
func (c *Catalog) TxnBegin() *TxnSchema {
	for {
		t := c.curTxns.Load()
		if t == nil { // before the first version check
			c.mu.Lock()
			t = c.txnSchemaLocked(c.version)
			c.mu.Unlock()
		}
		t.n.Add(1)
		// A version loaded between the two lines above may have been
		// reported without this transaction: register at the new one.
		// (refresh stores curTxns, then reads the counts: one of the two
		// sides sees the other.)
		if c.curTxns.Load() == t {
			return t
		}
		t.n.Add(-1)
	}
}

// TxnEnd ends a transaction registered by TxnBegin.
func (c *Catalog) TxnEnd(t *TxnSchema) { t.n.Add(-1) }

// txnSchemaLocked makes v the version new transactions register at.
func (c *Catalog) txnSchemaLocked(v int64) *TxnSchema {
	t := c.txnCounts[v]
	if t == nil {
		t = &TxnSchema{version: v}
		c.txnCounts[v] = t
	}
	for old := range c.txnCounts {
		if old <= v-historyLen { // older transactions fail CheckCommit anyway
			delete(c.txnCounts, old)
		}
	}
	c.curTxns.Store(t)
	return t
}

// effectiveLocked is the version this node reports to the schema syncer:
// the loaded one, or the oldest a running transaction began at.
func (c *Catalog) effectiveLocked() int64 {
	v := c.version
	for ver, t := range c.txnCounts {
		if ver < v && t.n.Load() > 0 {
			v = ver
		}
	}
	return v
}

// clock is monotonic time since the catalog was created, in nanoseconds.
func (c *Catalog) clock() int64 { return int64(time.Since(c.epoch)) }

// Version is the schema version this node has loaded. A transaction
// records it when it begins and passes it to CheckCommit.
func (c *Catalog) Version() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.version
}

// SetLease changes the schema lease (before the catalog is used).
func (c *Catalog) SetLease(d time.Duration) { c.lease = d }

// SetLogger sets where version changes and failed checks are logged
// (before the catalog is used; slog.Default() otherwise).
func (c *Catalog) SetLogger(l *slog.Logger) { c.log = l }

// ensureValid makes sure the cached schema is within its lease, checking the
// cluster's version now when it is not (one caller at a time). A node that
// cannot confirm its version within the lease must not use its cache: that
// is ERROR 8027.
func (c *Catalog) ensureValid(ctx context.Context) error {
	if c.clock() < c.validUntil.Load() {
		return nil
	}
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	if c.clock() < c.validUntil.Load() {
		return nil
	}
	if err := c.refresh(ctx); err != nil {
		return errno.New(errno.ErrInfoSchemaExpired,
			"Information schema is out of date: schema failed to update in 1 lease (%v), please make sure the SQL node can reach PD and the stores: %v", c.lease, err)
	}
	return nil
}

// refresh reads the cluster's schema version; when it moved, it loads the
// diffs in between and drops the cache. The lease is counted from before
// the read was sent.
func (c *Catalog) refresh(ctx context.Context) error {
	sent := c.clock()
	begin := time.Now()
	if !c.registered {
		// Registered before the first version read: a schema change that
		// commits after this sees the node and waits for it; one that
		// committed before is what the read below loads.
		if err := c.report(ctx); err != nil {
			schemaReloads.WithLabelValues("error").Inc()
			return err
		}
		c.registered = true
	}
	ts, err := c.store.GetTS(ctx)
	if err != nil {
		schemaReloads.WithLabelValues("error").Inc()
		return fmt.Errorf("get ts: %w", err)
	}
	v, err := c.readVersion(ctx, ts)
	if err != nil {
		schemaReloads.WithLabelValues("error").Inc()
		return err
	}
	schemaCheckSeconds.Observe(time.Since(begin).Seconds())
	c.mu.RLock()
	cur := c.version
	c.mu.RUnlock()
	if v == cur {
		schemaReloads.WithLabelValues("unchanged").Inc()
		if err := c.reportIfDue(ctx); err != nil {
			return err
		}
		c.confirmed(ts, sent)
		return nil
	}
	var diffs []schemaDiff
	if v > cur {
		from := max(cur+1, v-historyLen+1)
		pairs, err := kv.ScanAt(ctx, c.store, diffKey(from), diffKey(v+1), ts, 0)
		if err != nil {
			schemaReloads.WithLabelValues("error").Inc()
			return fmt.Errorf("read schema diffs: %w", err)
		}
		for _, kv := range pairs {
			var d schemaDiff
			if err := json.Unmarshal(kv.Value, &d); err != nil {
				return fmt.Errorf("corrupt schema diff: %w", err)
			}
			diffs = append(diffs, d)
		}
	}
	c.mu.Lock()
	if v > c.version {
		for _, d := range diffs {
			c.history[d.Version] = d
		}
		for old := range c.history {
			if old <= v-historyLen {
				delete(c.history, old)
			}
		}
		c.version = v
		c.txnSchemaLocked(v)
		c.gen++
		clear(c.dbs)
		clear(c.tables)
		schemaVersionGauge.Set(float64(v))
		c.log.Info("schema version loaded", "version", v, "from", cur)
	}
	c.mu.Unlock()
	schemaReloads.WithLabelValues("changed").Inc()
	if err := c.reportIfDue(ctx); err != nil {
		return err
	}
	c.confirmed(ts, sent)
	return nil
}

// confirmed records that the read at ts (sent at clock() sent) confirmed
// the loaded version: the lease runs from sent, the commit window from ts.
func (c *Catalog) confirmed(ts uint64, sent int64) {
	if ts > c.refreshTS.Load() {
		c.refreshTS.Store(ts) // under refreshMu: no other writer
	}
	c.validUntil.Store(sent + int64(c.lease))
}

// syncEntry is a SQL node's row in the schema syncer ('m' SchemaSync
// {node}): the version it has loaded and no running transaction of it
// began before, until when the row counts. The expiry is on PD's clock
// (the physical part of a TSO timestamp the node fetched before writing
// the row), so nodes' wall clocks never decide whether a node is alive.
// ExpiresMs (its own wall clock) is still written for, and read from,
// nodes that predate ExpiresPDMs.
type syncEntry struct {
	Version     int64 `json:"version"`
	ExpiresMs   int64 `json:"expires_ms"`
	ExpiresPDMs int64 `json:"expires_pd_ms,omitempty"`
}

// live reports whether the row still counts at PD time nowPD.
func (e syncEntry) live(nowPD int64) bool {
	if e.ExpiresPDMs > 0 {
		return e.ExpiresPDMs > nowPD
	}
	return e.ExpiresMs > failpoint.Now().UnixMilli()
}

func syncPrefix() []byte { return metaPrefix("SchemaSync") }

func (c *Catalog) syncKey() []byte { return codec.EncodeBytes(syncPrefix(), []byte(c.nodeID)) }

// syncTTL is how long a node's sync row counts without renewal (it is
// renewed every syncTTL/3); a node that cannot renew it stops serving
// (its refresh fails), so a row that expired belongs to a dead node.
func (c *Catalog) syncTTL() time.Duration { return max(30*c.lease, 3*time.Second) }

// reportIfDue writes this node's sync row when its version changed since
// the last write or the row is due for renewal.
func (c *Catalog) reportIfDue(ctx context.Context) error {
	c.mu.RLock()
	due := c.reported != c.effectiveLocked() || c.clock()-c.reportedAt > int64(c.syncTTL()/3)
	c.mu.RUnlock()
	if !due {
		return nil
	}
	return c.report(ctx)
}

// report writes this node's sync row. A row that had already expired when
// its renewal committed let the DDL owner go on without this node: the
// transactions running since then lapse (CheckCommit refuses them).
func (c *Catalog) report(ctx context.Context) error {
	c.mu.RLock()
	v := c.effectiveLocked()
	c.mu.RUnlock()
	at := c.clock()
	ttl := c.syncTTL()
	var expires int64
	commit, err := c.commitMeta(ctx, func(start uint64) *kvrpcpb.Mutation {
		expires = tso.Physical(start) + ttl.Milliseconds()
		row, _ := json.Marshal(syncEntry{Version: v, ExpiresMs: failpoint.Now().Add(ttl).UnixMilli(), ExpiresPDMs: expires})
		return &kvrpcpb.Mutation{Op: kvrpcpb.Op_Put, Key: c.syncKey(), Value: row}
	})
	if err != nil {
		return fmt.Errorf("report loaded schema version: %w", err)
	}
	c.mu.Lock()
	if c.rowExpires > 0 && tso.Physical(commit) >= c.rowExpires {
		c.lapseLocked(tso.Physical(commit) - c.rowExpires)
	}
	c.reported, c.reportedAt, c.rowExpires = v, at, expires
	c.mu.Unlock()
	return nil
}

// lapseLocked marks every running transaction lapsed: this node's sync
// row had expired (by late ms) before its renewal committed.
func (c *Catalog) lapseLocked(late int64) {
	running := 0
	for v, t := range c.txnCounts {
		t.lapsed.Store(true)
		running += int(t.n.Load())
		delete(c.txnCounts, v)
	}
	c.txnSchemaLocked(c.version)
	c.log.Warn("schema sync row expired before its renewal: running transactions that write will fail with 8028",
		"late_ms", late, "running", running, "ttl", c.syncTTL())
}

func (c *Catalog) writeMeta(ctx context.Context, m *kvrpcpb.Mutation) error {
	_, err := c.commitMeta(ctx, func(uint64) *kvrpcpb.Mutation { return m })
	return err
}

// commitMeta commits the mutation m returns for the start ts of its
// transaction and returns a timestamp taken right before the commit (the
// commit timestamp is at or above it).
func (c *Catalog) commitMeta(ctx context.Context, m func(start uint64) *kvrpcpb.Mutation) (uint64, error) {
	var commit uint64
	err := kv.Update(ctx, c.store, func(t kv.Txn) error {
		if err := kv.Mutate(t, []*kvrpcpb.Mutation{m(t.StartTS())}); err != nil {
			return err
		}
		var err error
		commit, err = c.store.GetTS(ctx)
		return err
	})
	return commit, err
}

// behind lists the live SQL nodes that have not loaded version v (their
// ids and the versions their sync rows show).
func (c *Catalog) behind(ctx context.Context, v int64) (map[string]int64, error) {
	ts, err := c.store.GetTS(ctx)
	if err != nil {
		return nil, err
	}
	p := syncPrefix()
	pairs, err := kv.ScanAt(ctx, c.store, p, tablecodec.PrefixNext(p), ts, 0)
	if err != nil {
		return nil, err
	}
	now := tso.Physical(ts)
	var out map[string]int64
	for _, kv := range pairs {
		var e syncEntry
		if err := json.Unmarshal(kv.Value, &e); err != nil {
			return nil, fmt.Errorf("corrupt schema sync row: %w", err)
		}
		if e.live(now) && e.Version < v {
			if out == nil {
				out = map[string]int64{}
			}
			_, node, _ := codec.DecodeBytes(kv.Key[len(p):], nil)
			out[string(node)] = e.Version
		}
	}
	return out, nil
}

func (c *Catalog) readVersion(ctx context.Context, ts uint64) (int64, error) {
	raw, found, err := kv.GetAt(ctx, c.store, versionKey(), ts)
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if !found {
		return 0, nil
	}
	if len(raw) != 8 {
		return 0, fmt.Errorf("corrupt schema version (%d bytes)", len(raw))
	}
	return int64(binary.BigEndian.Uint64(raw)), nil
}

// Keep checks the cluster's schema version every quarter lease until ctx is
// done, so that statements find the lease valid and never wait for a check;
// then it removes this node's sync row, so schema changes stop waiting
// for it.
func (c *Catalog) Keep(ctx context.Context) {
	t := time.NewTicker(c.lease / 4)
	defer t.Stop()
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = c.writeMeta(dctx, &kvrpcpb.Mutation{Op: kvrpcpb.Op_Del, Key: c.syncKey()})
	}()
	for {
		c.refreshMu.Lock()
		err := c.refresh(ctx)
		c.refreshMu.Unlock()
		if err != nil && ctx.Err() == nil {
			c.log.Warn("schema version check failed; statements fail with 8027 once the lease expires", "err", err, "lease", c.lease)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// syncWait is how long WaitVersion waits for a node whose sync row shows
// an older version before going on without it.
func (c *Catalog) syncWait() time.Duration { return 2 * c.lease }

// commitWindow is how long after the read that confirmed this node's
// version a transaction may commit without checking the schema again. A
// schema change committed after that read is followed by the next step
// of its job (or returns, for TRUNCATE and DROP) no sooner than syncWait
// later, while this node's sync row still shows an older version; half a
// lease is left for clock rate drift and for TSO's physical time running
// ahead of the owner's clock.
func (c *Catalog) commitWindow() time.Duration { return c.syncWait() - c.lease/2 }

// CheckCommit reports ERROR 8028 when a table in written changed its schema
// after the transaction t began (its rows would be written under a
// definition other nodes no longer use: a dropped or truncated table's dead
// id, an index it does not maintain). One compatible change (an index
// state step) is allowed: the DDL owner publishes the next one only after
// this transaction ended (TxnBegin), or after two leases, and then it
// spans two. To judge that it reads the cluster's version first. It
// confirms the lease first.
//
// The check holds for a commit_ts up to the guard's MaxCommitTS (the
// commit window after the read that confirmed the version); a commit that
// stalls past it (a slow prewrite, a region failover) is checked again at
// its commit_ts by the guard's Check, before its commit point, against
// the schema version committed below that timestamp.
func (c *Catalog) CheckCommit(ctx context.Context, t *TxnSchema, written func(yield func(int64) bool)) (kv.CommitGuard, error) {
	if err := c.ensureValid(ctx); err != nil {
		return kv.CommitGuard{}, err
	}
	if t.lapsed.Load() {
		schemaChangedAborts.Inc()
		return kv.CommitGuard{}, errno.New(errno.ErrInfoSchemaChanged,
			"Information schema is changed during the execution of the statement: this SQL node could not renew its schema registration within %v while the transaction ran, so schema changes may have gone on without it; nothing was committed, run the transaction again", c.syncTTL())
	}
	ids := slices.Collect(written)
	asOf := c.refreshTS.Load() // before the version the check reads
	ok, oneStep := c.checkCommit(t.version, c.Version(), ids)
	if !ok && oneStep {
		// One compatible step: make sure no second one was published since
		// this node's last check.
		c.refreshMu.Lock()
		err := c.refresh(ctx)
		c.refreshMu.Unlock()
		if err != nil {
			return kv.CommitGuard{}, errno.New(errno.ErrInfoSchemaExpired, "Information schema is out of date: %v", err)
		}
		asOf = c.refreshTS.Load()
		ok, oneStep = c.checkCommit(t.version, c.Version(), ids)
		ok = ok || oneStep
	}
	if err := c.commitVerdict(ok, t.version); err != nil {
		return kv.CommitGuard{}, err
	}
	return kv.CommitGuard{
		MaxCommitTS: tso.ComposeTS(tso.Physical(asOf)+c.commitWindow().Milliseconds(), 0),
		Check:       func(ctx context.Context, commitTS uint64) error { return c.checkAt(ctx, t.version, ids, commitTS) },
	}, nil
}

// checkAt is CheckCommit at commitTS: the schema version committed below
// it may be at most one compatible step on ids past began.
func (c *Catalog) checkAt(ctx context.Context, began int64, ids []int64, commitTS uint64) error {
	v, err := c.readVersion(ctx, commitTS)
	if err == nil {
		err = c.Load(ctx, v)
	}
	if err != nil {
		schemaCommitRechecks.WithLabelValues("error").Inc()
		return errno.New(errno.ErrInfoSchemaExpired,
			"Information schema is out of date: the commit was slow and the schema at its commit timestamp could not be read (%v); nothing was committed, run the transaction again", err)
	}
	ok, oneStep := c.checkCommit(began, v, ids)
	if ok || oneStep {
		schemaCommitRechecks.WithLabelValues("allowed").Inc()
		return nil
	}
	schemaCommitRechecks.WithLabelValues("refused").Inc()
	schemaChangedAborts.Inc()
	return infoSchemaChanged(began, v)
}

// checkCommit: ok when no table in ids changed in (began, upTo]; oneStep
// when exactly one compatible change did (allowed if no other one
// followed).
func (c *Catalog) checkCommit(began, upTo int64, ids []int64) (ok, oneStep bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	steps := 0
	for v := began + 1; v <= upTo; v++ {
		d, found := c.history[v]
		if !found { // older than the history: assume the worst
			return false, false
		}
		for _, id := range ids {
			if slices.Contains(d.TableIDs, id) {
				if !d.Compatible {
					return false, false
				}
				steps++
				break
			}
		}
	}
	switch steps {
	case 0:
		return true, false
	case 1:
		return false, true
	}
	return false, false
}

func (c *Catalog) commitVerdict(ok bool, began int64) error {
	if ok {
		return nil
	}
	schemaChangedAborts.Inc()
	return infoSchemaChanged(began, c.Version())
}

func infoSchemaChanged(from, to int64) error {
	return errno.New(errno.ErrInfoSchemaChanged,
		"Information schema is changed during the execution of the statement (for example, table definition may be updated by other DDL ran in parallel): schema version %d -> %d; nothing was committed, run the transaction again", from, to)
}

// commitDDL commits a schema change: the mutations build returns, plus the
// version bump and its diff (changed lists the table ids whose definition
// the change invalidates; compatible: a transaction that began one version
// before may still commit, see CheckCommit), in one transaction. build gets the start ts to
// read what it checks at; a concurrent schema change makes the version key
// conflict, and the whole change is built and tried again. build also gets
// the version the change commits. Afterwards this
// node has loaded the new version.
func (c *Catalog) commitDDL(ctx context.Context, changed []int64, compatible bool, build func(start uint64, version int64) ([]*kvrpcpb.Mutation, error)) error {
	for attempt := 0; ; attempt++ {
		var next int64
		err := kv.Update(ctx, c.store, func(t kv.Txn) error {
			start := t.StartTS()
			v, err := c.readVersion(ctx, start)
			if err != nil {
				return fmt.Errorf("catalog: %w", err)
			}
			next = v + 1
			muts, err := build(start, next)
			if err != nil {
				return err
			}
			var raw [8]byte
			binary.BigEndian.PutUint64(raw[:], uint64(next))
			diff, _ := json.Marshal(schemaDiff{Version: next, TableIDs: changed, Compatible: compatible})
			muts = append(muts,
				&kvrpcpb.Mutation{Op: kvrpcpb.Op_Put, Key: versionKey(), Value: raw[:]},
				&kvrpcpb.Mutation{Op: kvrpcpb.Op_Put, Key: diffKey(next), Value: diff})
			return kv.Mutate(t, muts)
		})
		var wc *kv.WriteConflictError
		// Two changes that read the same version also write the same diff
		// key; the store may report either key.
		if errors.As(err, &wc) && attempt < maxDDLRetries &&
			(string(wc.Key) == string(versionKey()) || string(wc.Key) == string(diffKey(next))) {
			continue
		}
		if err != nil {
			return err
		}
		c.refreshMu.Lock()
		err = c.refresh(ctx)
		c.refreshMu.Unlock()
		if err != nil {
			// Committed; the loader will catch up.
			c.log.Warn("schema change committed, reloading the version failed", "version", next, "err", err)
		}
		return nil
	}
}

// Load makes sure this node has loaded version v or a later one (a DDL
// job another node ran is visible to the session that issued it as soon
// as the job ended), checking the cluster's version now if needed.
func (c *Catalog) Load(ctx context.Context, v int64) error {
	if c.Version() >= v {
		return nil
	}
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	if c.Version() >= v {
		return nil
	}
	return c.refresh(ctx)
}

// WaitSchemaSync waits until every SQL node has loaded this node's version
// (the one just committed): until every live node's sync row shows it, as
// TiDB's schema syncer does, and at most two leases, after which a node
// that has not loaded it has stopped using its older one (one lease
// suffices by the lease rule; the second covers clock rate drift and a
// check in flight).
func (c *Catalog) WaitSchemaSync(ctx context.Context) error { return c.WaitVersion(ctx, c.Version()) }

// WaitVersion is WaitSchemaSync for version v (a DDL owner that took over a
// job waits for the version its previous owner committed).
func (c *Catalog) WaitVersion(ctx context.Context, v int64) error {
	begin := time.Now()
	defer func() { schemaSyncWaitSeconds.Observe(time.Since(begin).Seconds()) }()
	deadline := time.NewTimer(c.syncWait())
	defer deadline.Stop()
	poll := time.NewTicker(c.lease / 16)
	defer poll.Stop()
	var waited map[string]int64
	for {
		nodes, err := c.behind(ctx, v)
		if err == nil && len(nodes) == 0 {
			return nil
		}
		if err == nil && waited == nil {
			waited = nodes
			c.log.Info("waiting for SQL nodes to load schema version", "version", v, "nodes", nodes, "most", c.syncWait())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			if waited != nil {
				c.log.Warn("SQL nodes did not load schema version in time: going on without them (a node past its lease stops using its schema; a transaction of theirs that commits after its commit window is checked again at its commit_ts)", "version", v, "nodes", waited, "waited", c.syncWait())
			}
			return nil
		case <-poll.C:
		}
	}
}
