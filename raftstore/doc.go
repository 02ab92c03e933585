// Package raftstore is the multi-raft engine of a store node: one Pebble
// instance, one peer per local region (a go.etcd.io/raft RawNode), one
// store-wide Ready loop, the raft transport between stores and the
// heartbeats to PD.
//
// # Engine layout (one Pebble per store, key spaces by first byte)
//
//	0x01 0x01                      store ident: store id (8 bytes BE)
//	0x01 0x02 regionID             region local state: peer state byte
//	                               (0 normal, 1 tombstone, 2 applying a
//	                               snapshot) | metapb.Region
//	0x01 0x03 regionID             snapshot install in progress: index,
//	                               term, files' directory, description
//	                               (snapinstall.go)
//	0x01 0x04                      GC safe point data was collected under
//	                               here (8 bytes BE; gcsafepoint.go)
//	0x02 regionID 0x01             raft hard state (raftpb.HardState)
//	0x02 regionID 0x02 index       raft log entry (raftpb.Entry)
//	0x03 regionID                  apply state: applied index, truncated
//	                               index, truncated term (3 x 8 bytes BE);
//	                               entries up to the truncated index are
//	                               deleted (raft log GC)
//	'l' 'w' 'z' ...                user data: lock, write and default key
//	                               spaces (see kv/keys)
//
// All integers are big-endian so keys sort numerically. The engine's block
// cache is Config.BlockCacheSize (512 MiB by default, not Pebble's 8 MiB,
// which in bench/regions10k (three tables of 20,000 rows) held neither the
// data nor the index blocks of point reads: each read then read and
// decompressed blocks through the file system, 30 µs of a 45 µs read).
// Keys are ordered by kv/keys.Comparer (bytewise; a WRITE or DEFAULT key
// splits into 'w'/'z' enc(key) and its timestamp, every other key is whole)
// and every level's SSTables carry a bloom filter of those prefixes, so a
// point read (SeekPrefixGE) skips the tables that lack its key. The
// comparer's name is in the engine's files: a data directory written
// before it (Pebble's default comparer) does not open (ErrEngineComparer
// says what to do), and snapshot SSTables are written with the same
// options.
//
// # Regions and peers
//
// A store learns the regions never conf-changed that it must host from PD
// (StoreHeartbeatResponse create_regions). A new region's local state and
// initial raft state are written in one synced batch before its peer
// exists. Every replica of such a region starts from the same state (like
// TiKV): log truncated at index 5, term 5, commit 5, applied 5, voters = the
// region's peer ids (ConfState is derived from the region's peers and their
// roles), so no snapshot or conf-change entry is needed to form the group.
// The first peer of a fresh region campaigns at once. Peers added later by
// conf changes are created by raft messages and filled by a snapshot, and
// removed peers are destroyed (confchange.go).
//
// # The Ready loop (one goroutine per store)
//
// Request goroutines never touch a RawNode: proposals, reads, received raft
// messages, unreachable reports and new regions go into a mutex-guarded
// inbox that the loop swaps out whole. Each iteration:
//
//  1. ticks every awake (not hibernated) peer when the raft tick is due;
//  2. steps received messages, proposes writes (leader only, after epoch
//     and key checks; raft proposal forwarding is off) and puts all reads
//     that arrived for a region behind one ReadIndex with a unique context;
//  3. collects a Ready from every peer touched since the last iteration
//     (the active set: only those can have one; hibernate.go);
//  4. sends leaders' MsgApp/MsgHeartbeat at once (raft thesis 10.2.1: the
//     leader's fsync overlaps the followers'; raft only counts the leader's
//     own copy for commit after it is persisted);
//  5. applies the committed entries that were already in the local log
//     before this iteration and that this Ready does not rewrite (step 7's
//     batch, ahead of this fsync: a write committed by the followers' acks
//     is answered without waiting for an fsync of the entries proposed
//     since; an entry a new leader overwrote at a persisted index waits
//     for step 7, or a kill -9 would leave its effect applied over the
//     replaced entry in the log);
//  6. writes all their entries (deleting an overwritten log tail) and hard
//     states in ONE Pebble batch, committed with Sync when any Ready has
//     MustSync or installs a snapshot (raft acknowledges it; group commit,
//     at most one fsync per iteration across regions; a commit-index-only
//     change is not synced);
//  7. sends every other message (votes, append responses, ...), one
//     BatchRaftMessage per destination store;
//  8. applies the remaining committed entries in one indexed batch together
//     with each region's applied index, committed with NoSync; answers
//     proposals;
//  9. clears reads whose ReadState index is applied (renewing the lease);
//     Advance.
//
// Idle regions hibernate (no ticks, no heartbeats) and wake on a message,
// proposal or write; store liveness wakes the hibernated followers of a
// dead leader's store (hibernate.go has the rules and why they are safe).
// A hibernated leader serves reads without waking under the support its
// followers' stores give its store (support.go).
//
// Metrics: strata_raftstore_ready_loop_seconds (an iteration with a
// Ready), loop_iteration_seconds (every iteration), active_peers (peers
// polled per iteration), hibernated_peers, stores_down_total,
// ready_regions (peers with a Ready per iteration),
// raft_log_fsync_seconds, appended_entries_per_fsync and fsync_regions
// (group commit width), apply_seconds and applied_entries_per_batch (one
// apply batch), and per write on its leader, from its arrival:
// proposal_append_seconds (fsynced locally),
// proposal_commit_seconds (committed) and propose_wait_seconds (applied,
// answered). An iteration that lasts an election timeout or more logs a
// warning with the time of each phase (inbox, collect,
// apply_before_fsync, persist, send, apply, rest): meanwhile this store
// sent nothing, so the other stores may have elected new leaders.
//
// Durability: an entry is acknowledged only once a quorum persisted it
// (fsync in step 6 on each replica) and it was applied locally. The apply
// batch is not synced: it carries the applied index atomically with the
// data, so after a crash either both survive or neither does; Pebble's
// single WAL means a surviving apply batch implies the earlier synced log
// batch survived too (applied never exceeds the persisted log), and entries
// after the persisted applied index are simply applied again on restart
// (apply is deterministic). Store ident and region creation are synced
// before use. The hard state is written in the same batch as (never before)
// the entries it covers; since step 5 may apply entries before the batch
// carrying the commit index that covers them, a reload takes
// max(commit, applied) as the commit index.
//
// # Writes
//
// The raft log carries raft_cmdpb.RaftCmdRequest (a normal entry's data is
// the marshalled command; an empty entry is a leader's no-op): a header
// (region id, epoch, term, proposal id) and plain writes per key space
// (Put/Delete/DeleteRange of cf keys; the engine key is kv/keys.EngineKey(cf,
// key)), or an admin command (CompactLog, Split; Propose accepts none from
// callers: the store proposes them itself). raftstore knows nothing
// of transactions: the layer above (store/txn) evaluates against the
// engine on the leader under its own per-key latches and proposes the
// resulting writes through Store.Propose. After applying a DeleteRange
// (store/server's KvDeleteRange: the ranges of dropped tables and
// indexes), every replica compacts the range in the background
// (compact.go), so the space comes back on all of them.
//
// Propose checks leadership, the caller's leader generation, the epoch, the
// term (when given) and that every key lies in the region, then proposes.
// After the Ready containing the entry is persisted the proposal knows its
// (index, term); it is answered when an entry at that index applies on this
// store: the command's response if the terms match, else StaleCommand
// (another entry committed there, so this one never will). A persisted
// Ready that overwrites the entry in the local log decides nothing (with
// five voters the overwritten entry can still be elected with another
// peer's log and commit); if no entry at that index applies here within
// 4 election timeouts of the overwrite, the proposal gets ErrUndetermined.
// Raft refusing a proposal while this peer leads with no transfer in
// progress (too many uncommitted bytes) answers ServerIsBusy. The answer
// comes after the apply batch is committed, so a caller that releases its
// latches once Propose returns orders later evaluations after the write.
// ProposeTimed also answers where the proposal's time went (ProposeTiming:
// the inbox until raft took it, then to the leader's fsync, to the apply
// round that applied it, and that round), from timestamps the loop takes
// anyway; store/server returns them in the write's kvrpcpb.WriteDetail.
//
// Apply re-checks each command's epoch against the region at that index
// (the same on every replica): a data command needs the current version, an
// admin command the current conf_ver too. A mismatch writes nothing and
// answers EpochNotMatch with the current region (an entry proposed before a
// split must not write keys that now belong to the sibling). Otherwise the
// requests go into the apply batch, which also carries the applied index.
//
// # Split
//
// SplitRegion (the store RPC, the split checker) asks PD for new ids and
// proposes an admin Split; every replica applies it in the apply batch:
// the region shrinks to [start, first key), new regions take the rest, all
// with version + the number of new regions, and the new regions' local and
// initial raft state (index 5, term 5) are written in the same batch, so
// a crash keeps or loses the whole split with the applied index (the log
// re-applies it). New peers start after the batch commits; on the store
// that led the split they campaign at once. Raft messages for a region not
// hosted yet are held for 2s (orphans) and stepped when a split creates the
// peer. The leader reports all regions to PD at once (ReportBatchSplit).
// Region metadata lives once, in storeMeta (by id, and a B-tree by start
// key). A region from PD's store heartbeat that overlaps a local region is
// not created (the split will create it, with the data). The split checker
// (splitcheck.go) measures written regions off the loop and splits those
// over RegionSplitSize / RegionSplitKeys in the middle. Metrics:
// strata_raftstore_splits_total{result}, splits_applied_total,
// split_seconds, split_check_seconds, regions{type=peers|leaders}.
//
// # Raft log GC
//
// Every LogGCInterval (3s) the leader of each region proposes an admin
// CompactLog up to the lowest index every peer has (raft's match indexes,
// capped by its applied index; a peer more than LogGCLagLimit (10000)
// entries behind is left out and will get a snapshot) when LogGCThreshold
// (50) entries or LogGCSizeLimit (32 MiB) appended bytes lie above the
// truncated index. Every replica applies it at the same log position: the
// truncated index and term go into the apply state and the entries up to it
// are deleted, in the apply batch (truncation and applied index survive a
// crash together; a lost batch is re-applied). CompactLog is not
// epoch-checked. Metrics:
// strata_raftstore_raft_log_gc_{proposed,applied,entries_deleted}_total.
//
// # Snapshots
//
// When a peer needs entries below the leader's truncated index, raft asks
// the leader's storage for a snapshot. The loop takes a Pebble snapshot at
// the applied index (consistent with it) and a goroutine writes the
// region's ranges in every key space (kv/keys.CFBounds) into one SST file
// per non-empty key space under <data dir>/snap (memory: the sstable
// writer's buffers); raft is told "temporarily unavailable" until it is
// done. raft's snapshot data is only the description: the region, per
// file its key space, size, CRC-32C, key count and key bounds, and the GC
// safe point the store knew (gcsafepoint.go), which the receiver raises
// its own to in the install batch. The MsgSnap
// travels on its own RPC (storepb Snapshot: the message, then the files'
// bytes in 1 MiB chunks, throttled store-wide by
// Config.SnapshotMaxBytesPerSec, default 100 MiB/s; at most one send per
// destination store at a time; the outcome is reported to raft). The
// receiver writes the chunks to files of its own, checking sizes and CRCs
// and syncing them, then steps the message.
//
// Install (TiKV's PeerState Applying), when raft's Ready carries the
// snapshot: that Ready's synced batch range-deletes the region's ranges in
// every key space, drops the log, sets applied = truncated = the
// snapshot's index and marks the region "applying" with an install record
// (index, term, files); then the files are ingested (Pebble Ingest of hard
// links to them) on a goroutine, off the loop (inline in manual mode), and
// a second synced batch marks the region normal; the files are deleted
// last. Meanwhile the peer is "installing": the loop polls no Ready of it
// (it applies nothing and sends nothing; received messages are stepped and
// answered after the install), and it serves no replica read: follower
// reads wait for the install, and stale and follower reads check after
// taking their engine snapshot that the peer is not installing (it is
// marked so before the first batch commits; replicaread.go), so no read
// sees a half-installed region. After a crash between the two batches,
// Open ingests the kept files again (idempotent: nothing else writes the
// region meanwhile) before it creates the peer. Destroying an installing
// peer waits for its ingest. Proposals of the receiving peer at or below
// the snapshot's index get ErrUndetermined; the peer stopped leading
// before (Store.LeaderTerm, published when the loop handles raft's state
// change, is 0 by then), which a leader read whose wait such an answer
// ended checks after taking its snapshot (store/txn doc.go, "Leader reads").
// Metrics: strata_raftstore_snapshots_total{event}, snapshot_bytes_total{event}
// (SST bytes), snapshot_disk_bytes{kind} (files on disk),
// snapshot_generate_seconds, snapshot_send_seconds,
// snapshot_install_seconds (synced batch to normal, ingest included).
//
// # Consistency check
//
// CheckConsistency (the store's /debug/consistency, ConsistencyHandler)
// proposes an admin ComputeHash on a region's leader; every replica, when
// it applies it, commits its apply batch so far (data with the applied
// index), takes a Pebble snapshot (the region exactly at that index) and
// hashes the region's range in every key space on a goroutine. The leader
// then proposes VerifyHash with its hash and each replica compares when it
// applies it: strata_raftstore_consistency_checks_total{result}, an error
// log on a mismatch; ConsistencyHashes lists a store's hashes so a checker
// can compare the replicas itself (consistency.go). A replica lists the
// check's index as soon as it applied the ComputeHash, its hash only once
// the goroutine is done: a checker (replicacheck) waits for it and must
// not read the missing hash as a mismatch.
//
// # Testing: the deterministic harness
//
// harness_test.go runs stores in one process in manual mode
// (Config.manual: Open starts no goroutine; the test runs loop iterations,
// ticks and heartbeats in store-id order, snapshots are generated and sent
// synchronously) over an in-process transport with filters and a manual
// clock (Config.clock, read by the lease and peer lifecycle); with
// Config.fs on a crashable in-memory file system a store can be killed
// losing a seeded share of its unsynced writes, between operations or
// right after any named persistence step (persistSteps: raft log, apply,
// snapshot received / ingested / installed, region created, peer
// destroyed; Config.persisted reports each, the harness takes its crash
// image there and cuts the store off; TestHarnessCrashAtEveryPersistenceStep
// crashes at each under load and checks every acknowledged write and the
// replicas' hashes after the restart). A run replays from its
// seed: raft's election jitter (crypto/rand inside go.etcd.io/raft) is set
// to it with testing/cryptotest, and the loop ticks (manual mode) and
// handles Readies in region order, not map order; consistency hashes are
// computed inline in manual mode (TestHarnessReplay checks it).
//
// # Reads
//
// The leader serves reads under its lease or else through ReadIndex;
// either way they then run on the caller's goroutine straight from Pebble.
// Pending reads fail with NotLeader when the peer steps down. Followers
// and learners serve follower reads (after the leader's read index is
// applied here) and stale reads (at or below their safe ts, the resolved
// ts their leader publishes on StoreLiveness messages): replicaread.go has
// the design and the proof that a safe ts never covers a write the
// replica has not applied. Metrics: strata_raftstore_reads_total
// {path=follower_read_index|stale}, stale_read_not_ready_total.
//
// ReadIndex: every read that arrived in one iteration goes behind one raft
// ReadIndex (ReadOnlySafe, CheckQuorum, PreVote) with a unique context and
// is served once raft confirmed leadership for the read index and the
// applied index reached it; a leader that has not committed an entry in its
// term yet holds ReadIndex back, so nothing is read before replay after a
// restart.
//
// Leader lease (leaderLease, TiKV's design, not raft's ReadOnlyLeaseBased):
// a read that finds the lease valid is served as soon as the applied index
// reaches raft's commit index at that moment, with no raft message. The
// lease is renewed only by evidence that a quorum heard from this leader at
// or after a known local monotonic time start: a ReadIndex whose ReadState
// arrived (start = when the batch was issued, before the heartbeat carrying
// its context went out) or an own proposal of the current term that
// committed (start = when it was proposed). It then lasts until start +
// maxLease, where maxLease (Config.MaxLeaderLease) defaults to 0.8x the
// election timeout and is capped at 0.9 x (ElectionTicks-2) x RaftTick: a
// follower that acknowledged the leader reset its election timer and, with
// CheckQuorum, rejects (pre-)votes until ElectionTicks of its own ticks
// passed, which takes at least (ElectionTicks-2) ticks of real time (one
// tick may fire right after the reset and one late tick may be buffered);
// any quorum electing a new leader contains such a follower. Only clock-rate
// drift matters, never wall-clock time; the 10 % margin below that bound
// covers it (leaseFor). The lease is valid only in the term
// it was renewed in, while raft's state is leader, after an entry of that
// term committed (the leader's no-op: before it the leader may not know
// every committed entry), and while raft has no leader transfer in
// progress. It is dropped on step-down or term change, and when a transfer
// begins (MsgTimeoutNow forces votes past CheckQuorum) — decided in
// transferLeaders before raft can send MsgTimeoutNow — and then cannot be
// renewed for the rest of that term (the transferee may still campaign
// after raft aborted the transfer here). There are no conf changes yet;
// one must drop the lease too. A lease read past half the lease issues a
// ReadIndex without reads so the lease is renewed before it runs out
// (one quorum round per half lease under steady reads instead of one per
// batch). A restarted peer (persisted term above the initial one) drops
// vote requests for an election timeout: raft restarts it with no known
// leader, so CheckQuorum would not protect a lease it acknowledged just
// before the restart.
//
// Local reads (TiKV's LocalReader): after each renewal, once the apply
// batch holding the renewing entry is written, the loop publishes the lease
// (term, expiry, a copy of the region) in an atomic pointer per peer
// (readDelegate); Store.ReadIndex serves a read on the caller's goroutine,
// without a loop iteration, while it is published, the request's epoch
// matches and at least half of the lease is left (else the loop serves it
// and renews). Store.LocalRead is that check alone for a caller that must
// not wait, returning the lease's term with the region (the leader term
// its reads check again after their snapshot); ReadIndexQueued skips it
// for a caller whose LocalRead just failed. Every way the lease ends
// (step-down, term change, transfer start) and the apply of an admin
// command withdraw it first. It needs no
// wait for the applied index: a leader answers a write only after applying
// it, and the lease is published only after an entry of its term applied
// (so every earlier-term entry did). Metrics: strata_raftstore_reads_total
// {path=lease|local_lease|read_index}, strata_raftstore_lease_remaining_seconds.
// AppliedIndex (the applied index in the engine, published before any
// proposal of the batch is answered) is a follower read's read index.
//
// Fast failover (failover.go, where the safety argument is): a dial to a
// store that is refused (ECONNREFUSED: nothing listens on its address) shows
// that its process is gone, because a store withdraws every lease before it
// closes its listener and kill -9 ends both at once. The followers of the
// regions it led then elect a new leader at once, the first live voter by
// store id first (a forced election: no pre-vote, granted within the
// voters' CheckQuorum lease), instead of waiting out the election timeout.
// Only a follower whose current term's leader is on the gone store forces
// an election, and a forced vote in the next term can win only where no
// leader of that or a later term exists, so no live lease is pre-empted.
// A follower that refuses such a vote (the candidate's log is behind its
// own) campaigns at once the ordinary way. A paused or partitioned leader
// refuses nothing and keeps the election timeout
// (TestHarnessNoFastFailoverWhileLeaderLives); a killed one is replaced
// within a tick or two (TestHarnessFailoverKilledLeader, …FollowerBehind).
//
// Hibernated leaders (support.go): a leader that hibernated with a quorum
// of held followers (their stores promise, by store liveness, not to let
// them campaign or vote while they support the leader's store) publishes a
// delegate without an expiry whose lease lasts as long as those stores'
// support grants; reads are served from it, locally or in the loop,
// without waking the region. Waking withdraws it. Each hibernation is a
// new round and only acks of the current round count: a late ack of an
// earlier round at the same term and index comes from a follower the
// wake-up in between released (TestHarnessHibernateStaleAck).
// reads_total{path=hibernated_lease|local_hibernated_lease}.
//
// # Graceful stop (leader transfer)
//
// TransferLeaders (called by the store node on SIGTERM before Stop) puts the
// store in draining mode: every iteration, each region it leads with no
// transfer in progress gets a raft leader transfer to the voter with the
// highest match index among the recently active ones, and a region it wins
// again later is handed away again. Raft refuses proposals while a transfer
// is in progress; those writes are parked on the peer (never proposed) and,
// when the transfer ends, answered NotLeader with the new leader as hint, or
// proposed after all if raft aborted the transfer (after an election timeout
// without success). Writes already in the log are answered with their result
// when they apply: the transferee receives every entry before it campaigns,
// so they are committed in its term. The leader lease ends when the transfer
// starts, before the MsgTimeoutNow goes out, and is not renewed in that term;
// reads then go through ReadIndex (which needs a quorum in the leader's
// term; reads waiting when it steps down get NotLeader). The store keeps stepping raft messages all along,
// which is what lets the transfer finish; TransferLeaders returns once no
// local peer leads, every region it handed off has a new leader known here
// (the transferee's election may need this store's vote, which must reach
// it before the store stops), and no accepted write is unanswered.
//
// Stop then answers what is left: writes still in the inbox or parked (never
// proposed) with NotLeader, which clients retry elsewhere; proposed but
// unapplied writes with ErrUndetermined wrapping ErrStopped (the entry may
// still commit).
//
// # Transaction-layer hooks
//
// TxnHooks (txnhooks.go) let the layer above keep per-region state in the
// leader's memory (in-memory pessimistic locks): LeaderChanged on every
// leadership change of a local peer, before it serves in the new role;
// Handover before a leader transfer starts (on the loop, before raft's
// TransferLeader, so the transferee receives the writes before it
// campaigns) and before a split is proposed (queued ahead of it). Metric:
// strata_raftstore_handover_writes_total.
//
// # Transport
//
// One goroutine, gRPC connection and client stream (storepb Raft) per
// destination store, fed by a bounded queue the loop never blocks on; a full
// queue or a broken stream drops messages and reports the peers unreachable
// to raft. Addresses are resolved through PD on every (re)connect, with
// exponential backoff (20ms doubling to 250ms), cut short once when the
// destination store sends us raft messages (it is up again, e.g. restarted),
// so a restarted store rejoins the quorum quickly. Messages for a region this store does not know yet
// trigger an early store heartbeat. A loop iteration's messages to a store
// go in batches of at most 4 MiB, and its leaders read at most 8 MiB of
// log entries to send (sendBudget; past it one entry per message, 32
// messages in flight per follower): a store restarted behind on every
// region is caught up over many iterations, not in one that stalls the
// loop and exceeds gRPC's message limit (TestHarnessCatchUpBounded;
// strata_raftstore_send_budget_spent_total counts the iterations that
// used the whole budget).
//
// # Files
//
// store.go opens, bootstraps and stops a store and holds its API (Propose,
// Read, region lookups); inbox.go takes raft messages from the transport;
// loop.go is the Ready loop (tick, step, persist, send, with the phase
// timings behind the loop stall warning); propose.go, read.go (leases,
// ReadIndex) and transfer.go serve one concern each, with what concerns
// one peer only as methods of *peer (peer.go holds its state); apply.go
// holds the applier: the loop hands it each peer's committed entries, it
// writes them in one batch with the applied indexes and hands back the
// apply states, the proposals to answer and the side effects the loop
// runs after the commit (conf changes, splits, removed peers; what it
// needs of the store meanwhile is applyHost); cmd.go encodes and checks
// raft commands; split.go, confchange.go and loggc.go are the admin
// commands (their apply halves are applier methods); snapshot.go
// generates and sends snapshots (two generations at a time, paced at the
// send rate), snapinstall.go installs them; engine.go opens Pebble with
// the settings and event listener a store needs.
//
// # Not yet
//
// The install's range deletion makes the ingest flush the memtable first
// (IngestAndExcise would avoid it, but is not atomic with the raft state);
// a received snapshot raft refuses keeps its files until the peer's next
// install, its destruction or a restart. The newest log entries are cached
// in memory. A proposal whose leader stepped down stays
// pending until its index is applied here (answered with its result or
// StaleCommand) or, if it was overwritten locally, until the undetermined
// timeout; a request that gives up earlier (context, stop) has an
// undetermined outcome. No merges or async apply pool: the applier runs on the loop's goroutine. (A replica that
// lagged past log GC across a split installs the shrunk region from a
// snapshot; the regions split off are then created here by their leaders'
// raft messages as uninitialized peers and filled by snapshots too, never
// from PD's initial state, which would accept their log without the data
// from before the split: maybeCreatePeer.)
//
// # Region heartbeats, conf changes and settings
//
// Awake leaders send region heartbeats to PD every heartbeat interval;
// hibernated ones every HibernatedHeartbeatInterval (1 minute), queued
// together in one RegionHeartbeats call, so 10,000 idle regions cost a few
// calls a second. PD's store-heartbeat answer names the regions that have an
// operator step waiting (awaken_regions) and their leaders heartbeat at once.
// The split checker and log GC look only at written or awake regions. A PD
// operator step arrives in a region-heartbeat response; the leader checks it
// is safe now (a learner is promoted only once caught up, a removal leaves a
// live quorum, a leader never removes itself) and proposes a raft ConfChange
// carrying the region epoch, which every replica applies at the same index
// (confchange.go). Figures for 10,000 regions: bench/regions10k.
//
// Store flags (cmd/storenode) for the settings above: --split-check-interval
// (10 s), --region-split-size (96 MiB), --region-split-keys (960,000),
// --snap-max-write-bytes-per-sec (100 MiB/s), --block-cache-size (512 MiB),
// --leader-transfer-timeout, --in-memory-pessimistic-lock (on; store/txn).
// A harness run replays from -harness.seed or HARNESS_SEED.
package raftstore
