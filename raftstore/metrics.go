package raftstore

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics are process-wide (several in-process stores in tests share them).
var (
	latencyBuckets = prometheus.ExponentialBuckets(0.00005, 2, 18) // 50µs .. ~6.5s

	readyLoopSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "ready_loop_seconds",
		Help:    "Duration of one Ready loop iteration that handled at least one Ready (persist + send + apply).",
		Buckets: latencyBuckets,
	})
	raftLogFsyncSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "raft_log_fsync_seconds",
		Help:    "Duration of the synced Pebble commit of one Ready iteration's entries and hard states.",
		Buckets: latencyBuckets,
	})
	engineWriteStalls = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "engine_write_stalls_total",
		Help: "Pebble write stalls by reason (memtable count or L0 sublevels at their limit): writes, and so the Ready loop, wait.",
	}, []string{"reason"})
	engineWriteStallSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "engine_write_stall_seconds",
		Help:    "Duration of Pebble write stalls.",
		Buckets: latencyBuckets,
	})
	engineDiskSlowOps = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "engine_disk_slow_total",
		Help: "Engine file writes or syncs found still running after a second (Pebble's disk health check; one count per detection).",
	})
	applySeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "apply_seconds",
		Help:    "Duration of applying one Ready iteration's committed entries (all regions, one batch).",
		Buckets: latencyBuckets,
	})
	appliedEntries = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "applied_entries_per_batch",
		Help:    "Committed raft log entries applied per apply batch (one engine write for every region of a loop step).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14),
	})
	readyRegions = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "ready_regions",
		Help:    "Regions with a Ready per loop iteration (group commit width).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 12),
	})
	appendedEntries = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "appended_entries_per_fsync",
		Help:    "Raft log entries persisted per synced batch.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14),
	})
	proposeSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "propose_wait_seconds",
		Help:    "From a write reaching the store to its entry being applied.",
		Buckets: latencyBuckets,
	})
	readIndexSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "read_index_wait_seconds",
		Help:    "From a read reaching the store to it being cleared (leader lease or ReadIndex, then apply).",
		Buckets: latencyBuckets,
	})
	proposals = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "proposals_total",
		Help: "Write proposals by outcome.",
	}, []string{"result"})
	readsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "reads_total",
		Help: "Reads by path: on the leader lease, local_lease, hibernated_lease, local_hibernated_lease (no raft round) or read_index; on any replica follower_read_index (after the leader's read index) or stale (at or below the safe ts).",
	}, []string{"path"})
	// The reads_total series of the per-read paths, looked up once.
	readsLocalLease, readsLocalHibernated = readsTotal.WithLabelValues("local_lease"), readsTotal.WithLabelValues("local_hibernated_lease")
	readsStale, readsFollower             = readsTotal.WithLabelValues("stale"), readsTotal.WithLabelValues("follower_read_index")
	staleReadNotReady                     = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "stale_read_not_ready_total",
		Help: "Stale reads refused with DataIsNotReady (the timestamp is above the replica's safe ts).",
	})
	leaseRemainingSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "lease_remaining_seconds",
		Help:    "Lease time left when a read was served under the leader lease.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 12), // 1ms .. ~2s
	})
	confChanges = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "conf_changes_total",
		Help: "Conf changes by event (proposed, refused, applied, skipped, epoch_not_match).",
	}, []string{"event"})
	peersCreated = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "peers_created_total",
		Help: "Peers created, by source (raft_message: an uninitialized peer waiting for a snapshot).",
	}, []string{"source"})
	peersDestroyed = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "peers_destroyed_total",
		Help: "Peers destroyed after their removal from the region.",
	})
	leaderTransfers = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "leader_transfers_total",
		Help: "Leader transfers started by this store (graceful shutdown).",
	})
	transfersDeferred = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "leader_transfers_deferred_total",
		Help: "Leader transfers not started because raft refused the handover of the transaction layer's in-memory locks (tried again later).",
	})
	handoverWrites = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "handover_writes_total",
		Help: "Writes the transaction layer put into the log ahead of a leader transfer or split (its in-memory pessimistic locks).",
	})
	raftMessagesSent = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "raft_messages_sent_total",
		Help: "Raft messages handed to the transport.",
	})
	raftMessagesDropped = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "raft_messages_dropped_total",
		Help: "Raft messages dropped (send queue full or connection failure).",
	})
	sendBudgetSpent = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "send_budget_spent_total",
		Help: "Loop iterations whose leaders read their whole budget of log entries to send (a follower catching up is fed over several iterations).",
	})
	raftSendBatchSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "raft_send_seconds",
		Help:    "Duration of one stream Send of a batch of raft messages.",
		Buckets: latencyBuckets,
	})
	applyEpochNotMatch = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "apply_epoch_not_match_total",
		Help: "Committed commands that wrote nothing because the region's epoch changed after they were proposed.",
	})
	proposalsOverwritten = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "proposals_overwritten_total",
		Help: "Proposals whose entry another leader's entry replaced in the local log (answered once the index is decided, or undetermined).",
	})
	raftLogGCProposed = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "raft_log_gc_proposed_total",
		Help: "CompactLog commands proposed by leaders.",
	})
	raftLogGCApplied = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "raft_log_gc_applied_total",
		Help: "Raft log compactions applied (on every replica).",
	})
	raftLogGCEntries = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "raft_log_gc_entries_deleted_total",
		Help: "Raft log entries deleted by log compaction.",
	})
	snapshotsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "snapshots_total",
		Help: "Raft snapshots by event (sent, send_failed, received, receive_failed, dropped_overlap, applied).",
	}, []string{"event"})
	snapshotBytes = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "snapshot_bytes_total",
		Help: "Raft snapshot file bytes (SSTs) by event (generated, sent, received).",
	}, []string{"event"})
	snapshotGenerateSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "snapshot_generate_seconds",
		Help:    "Duration of writing a region's data out of a Pebble snapshot into SST files.",
		Buckets: latencyBuckets,
	})
	snapshotSendSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "snapshot_send_seconds",
		Help:    "Duration of sending one snapshot on the Snapshot RPC.",
		Buckets: latencyBuckets,
	})
	splitsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "splits_total",
		Help: "Region splits requested on this store (SplitRegion) by outcome (ok, epoch_not_match, not_leader, region_error, pd_error, undetermined).",
	}, []string{"result"})
	splitsApplied = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "splits_applied_total",
		Help: "Region splits applied by this store's replicas.",
	})
	splitSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "split_seconds",
		Help:    "From proposing a split to it being applied on the leader.",
		Buckets: latencyBuckets,
	})
	splitCheckSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "split_check_seconds",
		Help:    "Duration of one region's split check (a scan of its data).",
		Buckets: latencyBuckets,
	})
	hibernatedPeers = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "hibernated_peers",
		Help: "Peers whose raft group hibernates (no ticks, no heartbeats) until a message, proposal or read wakes it.",
	})
	wakes = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "wakes_total",
		Help: "Hibernated peers woken, by role (leader, follower).",
	}, []string{"role"})
	hibernateAcks = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "hibernate_acks_total",
		Help: "Followers' acks of their leader's hibernation received (each a held follower whose store's support lets the leader serve reads while hibernated).",
	})
	hibernateAcksStale = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "hibernate_acks_stale_total",
		Help: "Followers' acks of their leader's hibernation refused because they answer another hibernation round (late, or from a store that predates rounds).",
	})
	leaderChanges = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "leader_changes_total",
		Help: "Times a peer of this store became leader.",
	})
	activePeers = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "active_peers",
		Help:    "Peers the Ready loop polled in one iteration (touched since the previous one).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 16),
	})
	loopIterationSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "loop_iteration_seconds",
		Help:    "Duration of one Ready loop iteration, ticks and idle ones included.",
		Buckets: latencyBuckets,
	})
	storesDown = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "stores_down_total",
		Help: "Times another store was found down (not heard from for an election timeout, or unreachable), waking the hibernated peers that depend on it.",
	})
	fastCampaigns = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "fast_campaigns_total",
		Help: "Forced elections started by followers because their leader's store refused a connection (its process is gone; failover.go).",
	})
	regionsGauge = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "regions",
		Help: "Regions hosted by this store (peers) and led by it (leaders).",
	}, []string{"type"})
)

var (
	consistencyChecks = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "consistency_checks_total",
		Help: "VerifyHash outcomes on this store's replicas (match, mismatch, skipped: no local hash at that index, error: hashing failed).",
	}, []string{"result"})
	consistencyHashSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "consistency_hash_seconds",
		Help:    "Duration of hashing one region's data for a consistency check (off the Ready loop).",
		Buckets: latencyBuckets,
	})
)

// Stages of a write on its leader, each from its arrival on the store
// (propose_wait_seconds is the last: applied and answered).
var (
	proposalAppendSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "proposal_append_seconds",
		Help:    "From a write reaching the store to its entry being fsynced in the leader's log.",
		Buckets: latencyBuckets,
	})
	proposalCommitSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "proposal_commit_seconds",
		Help:    "From a write reaching the store to its entry being committed (a quorum fsynced it), before apply.",
		Buckets: latencyBuckets,
	})
	fsyncRegions = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "fsync_regions",
		Help:    "Regions whose entries or hard state one synced raft batch carries (group commit width in regions).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14),
	})
	snapshotInstallSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "snapshot_install_seconds",
		Help:    "Duration of a snapshot install, from writing its raft state into the Ready's batch to the region marked normal after the ingest of its files (off the Ready loop).",
		Buckets: latencyBuckets,
	})
	gcSafePointLearned = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "gc_safe_point_learned_total",
		Help: "Times this store's known GC safe point rose through raft rather than its own PD poll, by source (apply: a GC delete command; snapshot: an installed region snapshot).",
	}, []string{"from"})
	snapshotDiskBytes = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "snapshot_disk_bytes",
		Help: "Bytes of snapshot files on disk by kind (generated: kept for sends; received: waiting for or in their install).",
	}, []string{"kind"})
)
