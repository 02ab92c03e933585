package raftstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_serverpb"
	"github.com/stratadb/strata/proto/storepb"
)

// Snapshots. A leader's raft asks its Storage for a snapshot when a peer
// needs entries the log no longer has. The first request starts a
// generation off the Ready loop: the loop takes a Pebble snapshot at the
// applied index (cheap, consistent with it) and a goroutine copies the
// region's ranges in every key space (kv/keys.CFBounds) out of it; raft
// gets ErrSnapshotTemporarilyUnavailable until the copy is done and retries.
// The result is reused for other peers until the log is compacted past it
// or a send of it succeeds (then it is dropped from memory).
//
// Snapshot data: a sequence of (uvarint len, engine key, uvarint len,
// value). The MsgSnap goes to the peer's store on its own Snapshot RPC (not
// the raft stream): the message without the data first, then the data in
// snapshotChunkSize chunks. The receiver reassembles it and steps the
// message; when raft's Ready carries the snapshot, persist applies it in
// the Ready's synced batch, atomically: the region's ranges are cleared in
// every key space and refilled, the log is dropped, and the apply state
// becomes applied = truncated = the snapshot's index. Only leaders serve
// reads, and a peer receiving a snapshot is not one; either way no read
// sees a half-applied snapshot.

const snapshotChunkSize = 1 << 20

// snapGen is a generated (or in-flight) snapshot of a region.
type snapGen struct {
	index, term uint64
	cs          *raftpb.ConfState // the configuration at index
	confVer     uint64            // the region's conf_ver at index
	done        chan struct{}     // closed when data/err are set
	data        []byte
	err         error
}

func (g *snapGen) isDone() bool {
	select {
	case <-g.done:
		return true
	default:
		return false
	}
}

// Snapshot implements raft.Storage (see the comment above).
func (ps *peerStorage) Snapshot() (*raftpb.Snapshot, error) {
	g := ps.snap
	if g != nil {
		select {
		case <-g.done:
			if g.err == nil && g.index >= ps.apply.truncatedIndex && g.confVer == ps.region.GetRegionEpoch().GetConfVer() {
				return &raftpb.Snapshot{Data: g.data, Metadata: &raftpb.SnapshotMetadata{
					Index: new(g.index), Term: new(g.term), ConfState: g.cs,
				}}, nil
			}
			ps.snap = nil // failed, too old or of an older configuration: make a new one
		default:
			return nil, raft.ErrSnapshotTemporarilyUnavailable
		}
	}
	index := ps.apply.applied
	term, err := ps.Term(index)
	if err != nil {
		return nil, err
	}
	dbSnap := ps.db.NewSnapshot()
	g = &snapGen{index: index, term: term, cs: ps.confState(), confVer: ps.region.GetRegionEpoch().GetConfVer(), done: make(chan struct{})}
	ps.snap = g
	region := proto.Clone(ps.region).(*metapb.Region)
	if ps.syncSnap {
		g.data, g.err = readSnapshotData(dbSnap, region)
		dbSnap.Close()
		snapshotBytes.WithLabelValues("generated").Add(float64(len(g.data)))
		close(g.done)
		return ps.Snapshot()
	}
	if ps.gens != nil {
		ps.gens.Add(1) // Store.Stop waits for it before the engine closes
	}
	go func() {
		if ps.gens != nil {
			defer ps.gens.Done()
		}
		start := time.Now()
		g.data, g.err = readSnapshotData(dbSnap, region)
		dbSnap.Close()
		snapshotGenerateSeconds.Observe(time.Since(start).Seconds())
		snapshotBytes.WithLabelValues("generated").Add(float64(len(g.data)))
		close(g.done)
	}()
	return nil, raft.ErrSnapshotTemporarilyUnavailable
}

func (ps *peerStorage) confState() *raftpb.ConfState {
	cs := &raftpb.ConfState{}
	for _, p := range ps.region.GetPeers() {
		if p.GetRole() == metapb.PeerRole_Learner {
			cs.Learners = append(cs.Learners, p.GetId())
		} else {
			cs.Voters = append(cs.Voters, p.GetId())
		}
	}
	return cs
}

// readSnapshotData copies region's user data in every key space out of r,
// after the region itself (a peer created by a raft message learns its
// range and peers from it).
func readSnapshotData(r pebble.Reader, region *metapb.Region) ([]byte, error) {
	rb, err := proto.Marshal(region)
	if err != nil {
		return nil, fmt.Errorf("raftstore: marshal snapshot region: %w", err)
	}
	out := binary.AppendUvarint(nil, uint64(len(rb)))
	out = append(out, rb...)
	err = scanRegion(r, region, func(k, v []byte) {
		out = binary.AppendUvarint(out, uint64(len(k)))
		out = append(out, k...)
		out = binary.AppendUvarint(out, uint64(len(v)))
		out = append(out, v...)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scanRegion calls fn with every engine key and value of region in every
// key space of r, in key space then key order. k and v are valid only
// during the call.
func scanRegion(r pebble.Reader, region *metapb.Region, fn func(k, v []byte)) error {
	for _, cf := range keys.CFs {
		lo, hi := keys.CFBounds(cf, region.GetStartKey(), region.GetEndKey())
		it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			return err
		}
		for valid := it.First(); valid; valid = it.Next() {
			v, err := it.ValueAndErr()
			if err != nil {
				it.Close()
				return err
			}
			fn(it.Key(), v)
		}
		if err := it.Close(); err != nil {
			return err
		}
	}
	return nil
}

// writeSnapshot appends to b everything that applying snap to region's peer
// storage writes: the region's data replaced by the snapshot's, the log
// dropped, the apply state at the snapshot's index. The in-memory state is
// updated by snapshotPersisted once b committed.
func (ps *peerStorage) writeSnapshot(b *pebble.Batch, snap *raftpb.Snapshot) error {
	rb, data, err := snapField(snap.GetData())
	if err != nil {
		return err
	}
	region := &metapb.Region{}
	if err := proto.Unmarshal(rb, region); err != nil || region.GetId() != ps.regionID {
		return fmt.Errorf("%w: snapshot of region %d carries region %d (%v)", ErrCorrupt, ps.regionID, region.GetId(), err)
	}
	if old := ps.region; len(old.GetPeers()) > 0 && !sameRange(old, region) {
		// Clear the range this peer had too (initialized peers only).
		for _, cf := range keys.CFs {
			lo, hi := keys.CFBounds(cf, old.GetStartKey(), old.GetEndKey())
			if err := b.DeleteRange(lo, hi, nil); err != nil {
				return err
			}
		}
	}
	rs, err := encodeRegionState(peerStateNormal, region)
	if err != nil {
		return err
	}
	if err := b.Set(regionStateKey(region.GetId()), rs, nil); err != nil {
		return err
	}
	ps.pendingRegion = region
	for _, cf := range keys.CFs {
		lo, hi := keys.CFBounds(cf, region.GetStartKey(), region.GetEndKey())
		if err := b.DeleteRange(lo, hi, nil); err != nil {
			return err
		}
	}
	for len(data) > 0 {
		k, rest, err := snapField(data)
		if err != nil {
			return err
		}
		v, rest, err := snapField(rest)
		if err != nil {
			return err
		}
		data = rest
		if !keyInRegionSpaces(k, region) {
			return fmt.Errorf("%w: snapshot key %x outside region %d", ErrCorrupt, k, region.GetId())
		}
		if err := b.Set(k, v, nil); err != nil {
			return err
		}
	}
	lo, hi := entryRange(region.GetId())
	if err := b.DeleteRange(lo, hi, nil); err != nil {
		return err
	}
	idx, term := snap.GetMetadata().GetIndex(), snap.GetMetadata().GetTerm()
	as := applyState{applied: idx, truncatedIndex: idx, truncatedTerm: term}
	return b.Set(applyStateKey(region.GetId()), as.encode(), nil)
}

// snapshotPersisted updates the in-memory state after writeSnapshot's batch
// committed (before the entries of the same Ready are accounted).
func (ps *peerStorage) snapshotPersisted(snap *raftpb.Snapshot) {
	if ps.pendingRegion != nil {
		ps.region, ps.pendingRegion = ps.pendingRegion, nil
	}
	idx, term := snap.GetMetadata().GetIndex(), snap.GetMetadata().GetTerm()
	ps.apply = applyState{applied: idx, truncatedIndex: idx, truncatedTerm: term}
	ps.lastIndex, ps.lastTerm = idx, term
	ps.cache = nil
	ps.snap = nil
}

func sameRange(a, b *metapb.Region) bool {
	return bytes.Equal(a.GetStartKey(), b.GetStartKey()) && bytes.Equal(a.GetEndKey(), b.GetEndKey())
}

func snapField(b []byte) (field, rest []byte, err error) {
	n, m := binary.Uvarint(b)
	if m <= 0 || uint64(len(b)-m) < n {
		return nil, nil, fmt.Errorf("%w: truncated snapshot data", ErrCorrupt)
	}
	return b[m : m+int(n)], b[m+int(n):], nil
}

func keyInRegionSpaces(k []byte, region *metapb.Region) bool {
	for _, cf := range keys.CFs {
		lo, hi := keys.CFBounds(cf, region.GetStartKey(), region.GetEndKey())
		if bytes.Compare(k, lo) >= 0 && bytes.Compare(k, hi) < 0 {
			return true
		}
	}
	return false
}

// snapshotStatus reports a snapshot send's outcome to the loop (raft's
// ReportSnapshot).
type snapshotStatus struct {
	regionID, peerID uint64
	ok               bool
}

// snapshotSender sends MsgSnaps on the Snapshot RPC, at most one per
// destination store at a time (a second one for a store is dropped and
// reported failed; raft asks again).
type snapshotSender struct {
	s    *Store
	mu   sync.Mutex
	busy map[uint64]bool
	wg   sync.WaitGroup
}

// send starts sending m (whose marshalled raftpb.Message has no snapshot
// data) and data to storeID in the background.
func (ss *snapshotSender) send(storeID uint64, m *raft_serverpb.RaftMessage, data []byte) {
	ss.mu.Lock()
	if ss.busy == nil {
		ss.busy = map[uint64]bool{}
	}
	if ss.busy[storeID] || ss.s.ctx.Err() != nil {
		ss.mu.Unlock()
		ss.report(m, false)
		return
	}
	ss.busy[storeID] = true
	ss.wg.Add(1)
	ss.mu.Unlock()
	if net := ss.s.cfg.net; net != nil {
		// In process (harness): delivered synchronously, the outcome
		// reported to the next loop iteration.
		err := net.sendSnapshot(ss.s.id, storeID, m, data)
		ss.mu.Lock()
		delete(ss.busy, storeID)
		ss.mu.Unlock()
		ss.wg.Done()
		if err == nil {
			snapshotsTotal.WithLabelValues("sent").Inc()
			snapshotBytes.WithLabelValues("sent").Add(float64(len(data)))
		}
		ss.report(m, err == nil)
		return
	}
	go func() {
		defer ss.wg.Done()
		start := time.Now()
		err := ss.stream(storeID, m, data)
		ss.mu.Lock()
		delete(ss.busy, storeID)
		ss.mu.Unlock()
		if err != nil {
			snapshotsTotal.WithLabelValues("send_failed").Inc()
			ss.s.log.Warn("send snapshot", "region", m.GetRegionId(), "to_store", storeID, "bytes", len(data), "err", err)
		} else {
			snapshotsTotal.WithLabelValues("sent").Inc()
			snapshotBytes.WithLabelValues("sent").Add(float64(len(data)))
			snapshotSendSeconds.Observe(time.Since(start).Seconds())
			ss.s.log.Info("snapshot sent", "region", m.GetRegionId(), "to_store", storeID, "bytes", len(data), "took", time.Since(start))
		}
		ss.report(m, err == nil)
	}()
}

func (ss *snapshotSender) report(m *raft_serverpb.RaftMessage, ok bool) {
	st := snapshotStatus{regionID: m.GetRegionId(), peerID: m.GetToPeer().GetId(), ok: ok}
	ss.s.inbox.push(func(in *inboxMsgs) { in.snapStatus = append(in.snapStatus, st) })
}

func (ss *snapshotSender) stream(storeID uint64, m *raft_serverpb.RaftMessage, data []byte) error {
	ctx, cancel := context.WithTimeout(ss.s.ctx, 2*time.Minute)
	defer cancel()
	st, err := ss.s.pd.GetStore(ctx, storeID)
	if err != nil {
		return err
	}
	conn, err := grpc.NewClient(st.GetAddress(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	stream, err := storepb.NewStoreClient(conn).Snapshot(ctx)
	if err != nil {
		return err
	}
	first := true
	for first || len(data) > 0 {
		n := min(len(data), snapshotChunkSize)
		c := &raft_serverpb.SnapshotChunk{Data: data[:n]}
		if first {
			c.Message = m
			first = false
		}
		data = data[n:]
		if err := stream.Send(c); err != nil {
			if errors.Is(err, io.EOF) {
				_, err = stream.CloseAndRecv()
			}
			return err
		}
	}
	_, err = stream.CloseAndRecv()
	return err
}

// maxSnapshotBytes bounds a received snapshot (memory: it is assembled
// whole before it is stepped).
const maxSnapshotBytes = 1 << 30

// ServeSnapshotStream is the receiving end of the Snapshot RPC: it
// assembles one snapshot and hands its MsgSnap to the region's peer.
func (s *Store) ServeSnapshotStream(stream storepb.Store_SnapshotServer) error {
	var rm *raft_serverpb.RaftMessage
	var data []byte
	for {
		c, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if c.GetMessage() != nil {
			rm = c.GetMessage()
		}
		if len(data)+len(c.GetData()) > maxSnapshotBytes {
			return fmt.Errorf("raftstore: snapshot larger than %d bytes", maxSnapshotBytes)
		}
		data = append(data, c.GetData()...)
	}
	if rm == nil {
		return errors.New("raftstore: snapshot stream without a message")
	}
	msg := &raftpb.Message{}
	if err := proto.Unmarshal(rm.GetMessage(), msg); err != nil {
		return fmt.Errorf("raftstore: bad snapshot message: %w", err)
	}
	if msg.GetType() != raftpb.MessageType_MsgSnap || msg.Snapshot == nil {
		return errors.New("raftstore: snapshot stream carries no MsgSnap")
	}
	msg.Snapshot.Data = data
	snapshotsTotal.WithLabelValues("received").Inc()
	snapshotBytes.WithLabelValues("received").Add(float64(len(data)))
	if f := s.raftFilter.Load(); f != nil && (*f)(rm.GetFromPeer().GetStoreId()) {
		return errors.New("raftstore: partitioned by a test")
	}
	if !s.inbox.push(func(m *inboxMsgs) { m.snaps = append(m.snaps, receivedSnap{rm: rm, msg: msg}) }) {
		return ErrStopped
	}
	return stream.SendAndClose(&raft_serverpb.Done{})
}

type receivedSnap struct {
	rm  *raft_serverpb.RaftMessage
	msg *raftpb.Message
}

// snapshotOverlaps reports whether the region a received snapshot carries
// overlaps another region hosted here (TiKV's check_snapshot): installing
// it would wipe that region's data. The snapshot is dropped; the leader
// sends another once this store has caught up (e.g. applied the split, or
// the other peer was destroyed).
func (s *Store) snapshotOverlaps(p *peer, msg *raftpb.Message) bool {
	rb, _, err := snapField(msg.GetSnapshot().GetData())
	if err != nil {
		return false // writeSnapshot reports the corruption
	}
	region := &metapb.Region{}
	if err := proto.Unmarshal(rb, region); err != nil {
		return false
	}
	for _, o := range s.meta.overlapping(region.GetStartKey(), region.GetEndKey()) {
		if o.GetId() != p.region.GetId() {
			snapshotsTotal.WithLabelValues("dropped_overlap").Inc()
			s.log.Info("snapshot overlaps a local region; dropped until it is gone", "region", region.GetId(), "local", o.GetId())
			return true
		}
	}
	return false
}
