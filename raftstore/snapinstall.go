package raftstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"path/filepath"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/failpoint"
	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_serverpb"
	"github.com/stratadb/strata/proto/storepb"
)

// Snapshots: receiving and installing (generation and sending are in
// snapshot.go).
//
// The receiver writes the chunks of the Snapshot RPC to files in a
// directory of its own under <data dir>/snap, checking each file's size
// and CRC and syncing it, then steps the MsgSnap (whose data is the
// snapshot's description) into the region's peer; the peer storage keeps
// the directory by (index, term) until raft installs that snapshot or a
// newer commit makes it useless.
//
// Install, when raft's Ready carries the snapshot (TiKV's PeerState
// Applying): the Ready's synced batch clears the region's ranges in every
// key space (DeleteRange), drops the log, sets applied = truncated = the
// snapshot's index and records the region as "applying" together with
// the snapshot's description and directory (snapApplyKey). Then the files
// are ingested (Pebble Ingest of hard links to them: the ingested SSTs sit
// above the range deletions), off the Ready loop on a goroutine of their
// own (synchronously in manual mode), and a second synced batch marks the
// region normal and deletes the record; the files go last. Until then the
// peer is "installing": the loop polls no Ready of it (raft neither applies
// entries nor sends messages for it; messages it receives are stepped and
// answered afterwards), and it is a follower, so it serves no read. A crash
// between the two batches leaves the record: Open ingests the kept files
// again (idempotent: nothing else writes the region's ranges meanwhile)
// before the peer is created. Destroying an installing peer waits for its
// ingest first.

// receivedSnap is a MsgSnap whose files were received into dir.
type receivedSnap struct {
	rm  *raft_serverpb.RaftMessage
	msg *raftpb.Message
	dir string
}

type snapKey struct{ index, term uint64 }

// ServeSnapshotStream is the receiving end of the Snapshot RPC: it writes
// one snapshot's files to disk and hands its MsgSnap to the region's peer.
func (s *Store) ServeSnapshotStream(stream storepb.Store_SnapshotServer) error {
	rs, err := s.receiveSnapshot(stream.Recv)
	if err != nil {
		return err
	}
	if !s.inbox.push(func(m *inboxMsgs) { m.snaps = append(m.snaps, rs) }) {
		s.snaps.removeDir(rs.dir)
		return ErrStopped
	}
	return stream.SendAndClose(&raft_serverpb.Done{})
}

// receiveSnapshot reads one snapshot from recv (until io.EOF): the
// message, then the files' bytes, which it writes into a new directory.
func (s *Store) receiveSnapshot(recv func() (*raft_serverpb.SnapshotChunk, error)) (receivedSnap, error) {
	c, err := recv()
	if err != nil {
		return receivedSnap{}, err
	}
	rm := c.GetMessage()
	if rm == nil {
		return receivedSnap{}, errors.New("raftstore: snapshot stream without a message")
	}
	msg := &raftpb.Message{}
	if err := proto.Unmarshal(rm.GetMessage(), msg); err != nil {
		return receivedSnap{}, fmt.Errorf("raftstore: bad snapshot message: %w", err)
	}
	if msg.GetType() != raftpb.MessageType_MsgSnap || msg.Snapshot == nil {
		return receivedSnap{}, errors.New("raftstore: snapshot stream carries no MsgSnap")
	}
	meta, err := decodeSnapMeta(msg.GetSnapshot().GetData())
	if err != nil {
		return receivedSnap{}, err
	}
	if meta.region.GetId() != rm.GetRegionId() {
		return receivedSnap{}, fmt.Errorf("%w: snapshot for region %d carries region %d", ErrCorrupt, rm.GetRegionId(), meta.region.GetId())
	}
	if f := s.raftFilter.Load(); f != nil && (*f)(rm.GetFromPeer().GetStoreId()) {
		return receivedSnap{}, errors.New("raftstore: partitioned by a test")
	}
	ss := &s.snaps
	md := msg.GetSnapshot().GetMetadata()
	dir := ss.newDir("rcv", rm.GetRegionId(), md.GetTerm(), md.GetIndex())
	w := &snapFilesWriter{fs: ss.fs, dir: dir, files: meta.files}
	err = func() error {
		if err := ss.fs.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := w.write(c.GetData()); err != nil {
			return err
		}
		for {
			c, err := recv()
			if errors.Is(err, io.EOF) {
				return w.finish()
			}
			if err != nil {
				return err
			}
			if err := w.write(c.GetData()); err != nil {
				return err
			}
		}
	}()
	if err != nil {
		w.abort()
		if rerr := ss.fs.RemoveAll(dir); rerr != nil {
			s.log.Warn("remove snapshot files", "dir", dir, "err", rerr)
		}
		snapshotsTotal.WithLabelValues("receive_failed").Inc()
		return receivedSnap{}, err
	}
	s.stepPersisted("snapshot-received")
	ss.addDisk(dir, "received", meta.size())
	snapshotsTotal.WithLabelValues("received").Inc()
	snapshotBytes.WithLabelValues("received").Add(float64(meta.size()))
	return receivedSnap{rm: rm, msg: msg, dir: dir}, nil
}

// snapFilesWriter splits the received bytes into the described files,
// checking sizes and CRCs; each file is synced when complete.
type snapFilesWriter struct {
	fs    vfs.FS
	dir   string
	files []snapFile
	i     int // the file being written
	f     vfs.File
	crc   hash.Hash32
	n     uint64
}

func (w *snapFilesWriter) write(p []byte) error {
	for len(p) > 0 {
		if w.i >= len(w.files) {
			return fmt.Errorf("%w: snapshot data beyond its files", ErrCorrupt)
		}
		sf := w.files[w.i]
		if w.f == nil {
			f, err := w.fs.Create(filepath.Join(w.dir, sf.name()), vfs.WriteCategoryUnspecified)
			if err != nil {
				return err
			}
			w.f, w.crc, w.n = f, crc32.New(snapCRCTable), 0
		}
		n := min(uint64(len(p)), sf.size-w.n)
		w.crc.Write(p[:n]) // before the file's Write, which may modify p (vfs.File)
		if _, err := w.f.Write(p[:n]); err != nil {
			return err
		}
		w.n += n
		p = p[n:]
		if w.n == sf.size {
			if got := w.crc.Sum32(); got != sf.crc {
				return fmt.Errorf("%w: snapshot file %s has CRC %08x, want %08x", ErrCorrupt, sf.name(), got, sf.crc)
			}
			f := w.f
			w.f = nil
			if err := errors.Join(f.Sync(), f.Close()); err != nil {
				return err
			}
			w.i++
		}
	}
	return nil
}

// finish checks that every file is complete and makes the directory
// durable.
func (w *snapFilesWriter) finish() error {
	if w.i < len(w.files) {
		return fmt.Errorf("%w: snapshot stream ended after %d of %d files", ErrCorrupt, w.i, len(w.files))
	}
	if err := syncDir(w.fs, w.dir); err != nil {
		return err
	}
	return syncDir(w.fs, filepath.Dir(w.dir))
}

func (w *snapFilesWriter) abort() {
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
}

// stepReceivedSnapshots steps received MsgSnaps into their peers (the loop);
// the files of those dropped are deleted.
func (s *Store) stepReceivedSnapshots(snaps []receivedSnap) {
	for _, rs := range snaps {
		p := s.peers[rs.rm.GetRegionId()]
		if p == nil || rs.rm.GetToPeer().GetId() != p.meta.GetId() || s.snapshotOverlaps(p, rs.msg) {
			s.snaps.removeDir(rs.dir)
			continue
		}
		p.ps.addReceived(rs)
		s.stepMessage(p, rs.rm, rs.msg)
	}
}

// addReceived keeps rs's files for raft's Ready. Received snapshots at or
// below the commit index are dropped: raft refuses them.
func (ps *peerStorage) addReceived(rs receivedSnap) {
	md := rs.msg.GetSnapshot().GetMetadata()
	if ps.received == nil {
		ps.received = map[snapKey]string{}
	}
	k := snapKey{md.GetIndex(), md.GetTerm()}
	if old, ok := ps.received[k]; ok {
		ps.snaps.removeDir(old)
	}
	ps.received[k] = rs.dir
	for k, dir := range ps.received {
		if k.index <= ps.hardState.GetCommit() {
			ps.snaps.removeDir(dir)
			delete(ps.received, k)
		}
	}
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

// snapInstall is a snapshot whose raft state is persisted with the region
// "applying" and whose files (in dir) are not yet ingested, or just were.
type snapInstall struct {
	index, term uint64
	region      *metapb.Region
	meta        *snapMeta
	dir         string
	start       time.Time
	ingested    chan struct{} // closed when an ingest on a goroutine ended (nil: none started)
}

// installing reports whether the peer is installing a snapshot: it must
// serve no read and apply nothing until the install finished.
func (ps *peerStorage) installing() bool { return ps.install != nil }

// writeSnapshot appends to b the first half of installing snap (see the
// comment at the top): the region's ranges cleared, the log dropped, the
// apply state at the snapshot's index, the region "applying" with the
// install record. The in-memory state is updated by snapshotPersisted once
// b committed; the files are ingested after that.
func (ps *peerStorage) writeSnapshot(b *pebble.Batch, snap *raftpb.Snapshot) error {
	meta, err := decodeSnapMeta(snap.GetData())
	if err != nil {
		return err
	}
	region := meta.region
	if region.GetId() != ps.regionID {
		return fmt.Errorf("%w: snapshot of region %d carries region %d", ErrCorrupt, ps.regionID, region.GetId())
	}
	md := snap.GetMetadata()
	k := snapKey{md.GetIndex(), md.GetTerm()}
	dir, ok := ps.received[k]
	if !ok {
		return fmt.Errorf("raftstore: no received files for the snapshot of region %d at index %d term %d", ps.regionID, k.index, k.term)
	}
	delete(ps.received, k)
	for k2, d := range ps.received {
		if k2.index <= k.index { // superseded: raft will never install it
			ps.snaps.removeDir(d)
			delete(ps.received, k2)
		}
	}
	if old := ps.region; len(old.GetPeers()) > 0 && !sameRange(old, region) {
		// Clear the range this peer had too (initialized peers only).
		if err := deleteRegionData(b, old); err != nil {
			return err
		}
	}
	if err := deleteRegionData(b, region); err != nil {
		return err
	}
	// Before the ingest makes the snapshot's data visible.
	if err := ps.snaps.s.learnGCSafePoint(b, meta.gcSafePoint, "snapshot"); err != nil {
		return err
	}
	rs, err := encodeRegionState(peerStateApplying, region)
	if err != nil {
		return err
	}
	if err := b.Set(regionStateKey(region.GetId()), rs, nil); err != nil {
		return err
	}
	if err := b.Set(snapApplyKey(region.GetId()), encodeSnapApply(k, filepath.Base(dir), snap.GetData()), nil); err != nil {
		return err
	}
	lo, hi := entryRange(region.GetId())
	if err := b.DeleteRange(lo, hi, nil); err != nil {
		return err
	}
	as := applyState{applied: k.index, truncatedIndex: k.index, truncatedTerm: k.term}
	if err := b.Set(applyStateKey(region.GetId()), as.encode(), nil); err != nil {
		return err
	}
	ps.pendingRegion = region
	ps.install = &snapInstall{index: k.index, term: k.term, region: region, meta: meta, dir: dir, start: time.Now()}
	return nil
}

func deleteRegionData(b *pebble.Batch, r *metapb.Region) error {
	for _, cf := range keys.CFs {
		lo, hi := keys.CFBounds(cf, r.GetStartKey(), r.GetEndKey())
		if err := b.DeleteRange(lo, hi, nil); err != nil {
			return err
		}
	}
	return nil
}

// encodeSnapApply is the install record: uvarint index, uvarint term,
// (uvarint len, directory name), the snapshot's data.
func encodeSnapApply(k snapKey, dir string, data []byte) []byte {
	out := binary.AppendUvarint(nil, k.index)
	out = binary.AppendUvarint(out, k.term)
	out = binary.AppendUvarint(out, uint64(len(dir)))
	out = append(out, dir...)
	return append(out, data...)
}

func (ss *snapshotSender) decodeSnapApply(v []byte) (*snapInstall, error) {
	idx, n := binary.Uvarint(v)
	if n <= 0 {
		return nil, fmt.Errorf("%w: snapshot install record", ErrCorrupt)
	}
	term, m := binary.Uvarint(v[n:])
	if m <= 0 {
		return nil, fmt.Errorf("%w: snapshot install record", ErrCorrupt)
	}
	dir, data, err := snapField(v[n+m:])
	if err != nil {
		return nil, err
	}
	meta, err := decodeSnapMeta(data)
	if err != nil {
		return nil, err
	}
	return &snapInstall{index: idx, term: term, region: meta.region, meta: meta, dir: filepath.Join(ss.dir, string(dir)), start: time.Now()}, nil
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
	ps.dropSnap()
}

// snapshotWritten runs on the loop once the synced batch with p's snapshot
// (writeSnapshot) committed: the peer takes the snapshot's region and
// state, and the ingest starts (on a goroutine; at once in manual mode).
func (s *Store) snapshotWritten(p *peer, snap *raftpb.Snapshot) {
	p.ps.snapshotPersisted(snap)
	s.snapshotInstalled(p)
	p.snapshotApplied(snap.GetMetadata().GetIndex())
	inst := p.ps.install
	if h := s.snaps.holdIngest; h != nil && h(p.region.GetId()) {
		return // a test stops here, as a crash would
	}
	if s.snaps.manual {
		s.installDone(p, inst, s.snaps.ingest(inst))
		return
	}
	inst.ingested = make(chan struct{})
	s.snaps.wg.Add(1)
	go func() {
		defer s.snaps.wg.Done()
		err := s.snaps.ingest(inst)
		close(inst.ingested)
		// Dropped when the store stopped: Open ingests again.
		s.inbox.push(func(m *inboxMsgs) { m.ingested = append(m.ingested, ingestResult{p: p, inst: inst, err: err}) })
	}()
}

// ingestResult reports an ingest that ran on a goroutine to the loop.
type ingestResult struct {
	p    *peer
	inst *snapInstall
	err  error
}

// ingest ingests inst's files (hard links to them: Pebble removes what it
// ingests, and the files must survive until the region is marked normal).
func (ss *snapshotSender) ingest(inst *snapInstall) error {
	paths := make([]string, 0, len(inst.meta.files))
	for _, f := range inst.meta.files {
		src := filepath.Join(inst.dir, f.name())
		dst := src + ".ingest"
		_ = ss.fs.Remove(dst) // left by an ingest a crash interrupted
		if err := vfs.LinkOrCopy(ss.fs, src, dst); err != nil {
			return fmt.Errorf("raftstore: link snapshot file of region %d: %w", inst.region.GetId(), err)
		}
		paths = append(paths, dst)
	}
	if len(paths) == 0 {
		return nil
	}
	failpoint.Hit("snapshot-before-ingest")
	if err := ss.s.db.Ingest(context.Background(), paths); err != nil {
		return fmt.Errorf("raftstore: ingest snapshot of region %d: %w", inst.region.GetId(), err)
	}
	ss.s.stepPersisted("snapshot-ingested")
	return nil
}

// finishInstall marks inst's region normal (synced) and deletes its files.
func (ss *snapshotSender) finishInstall(inst *snapInstall) error {
	failpoint.Hit("snapshot-before-install-done")
	b := ss.s.db.NewBatch()
	defer b.Close()
	rs, err := encodeRegionState(peerStateNormal, inst.region)
	if err != nil {
		return err
	}
	if err := b.Set(regionStateKey(inst.region.GetId()), rs, nil); err != nil {
		return err
	}
	if err := b.Delete(snapApplyKey(inst.region.GetId()), nil); err != nil {
		return err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return err
	}
	ss.s.stepPersisted("snapshot-install")
	ss.removeDir(inst.dir)
	return nil
}

// installDone finishes p's install after its ingest (the loop).
func (s *Store) installDone(p *peer, inst *snapInstall, err error) {
	if err != nil {
		s.fatal("install snapshot", err)
	}
	if p.destroyed || p.ps.install != inst {
		return // destroyPeer waited for the ingest and cleaned up
	}
	if err := s.snaps.finishInstall(inst); err != nil {
		s.fatal("install snapshot", err)
	}
	p.ps.install = nil
	p.installingPub.Store(false)
	p.locksKnown = false // new data, new locks (replicaread.go)
	p.serveApplyWaits()
	took := time.Since(inst.start)
	snapshotInstallSeconds.Observe(took.Seconds())
	snapshotsTotal.WithLabelValues("applied").Inc()
	s.log.Info("snapshot applied", "region", p.region.GetId(), "index", inst.index,
		"bytes", inst.meta.size(), "keys", inst.meta.keys(), "files", len(inst.meta.files), "took", took)
	s.wake(p)
}

// waitSnapshotIngest waits for an ingest of p's in flight (destroyPeer,
// before it deletes p's data: the ingest would write it back).
func (s *Store) waitSnapshotIngest(p *peer) {
	if inst := p.ps.install; inst != nil && inst.ingested != nil {
		<-inst.ingested
	}
}

// dropSnapshotFiles deletes p's snapshot files (destroyPeer, once the
// destruction, which deletes the install record, is persisted).
func (s *Store) dropSnapshotFiles(p *peer) {
	p.ps.dropSnap()
	for k, dir := range p.ps.received {
		s.snaps.removeDir(dir)
		delete(p.ps.received, k)
	}
	if inst := p.ps.install; inst != nil {
		s.snaps.removeDir(inst.dir)
		p.ps.install = nil
	}
}

// recover finishes the installs a crash interrupted (regions recorded
// "applying": their files are ingested again, then the region is marked
// normal) and deletes every other snapshot file (generated ones are made
// again on demand; received ones were never installed). Open calls it
// before it creates the peers.
func (ss *snapshotSender) recover() error {
	lo, hi := snapApplyRange()
	it, err := ss.s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	var insts []*snapInstall
	for valid := it.First(); valid; valid = it.Next() {
		inst, err := ss.decodeSnapApply(it.Value())
		if err != nil {
			it.Close()
			return err
		}
		insts = append(insts, inst)
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return err
	}
	for _, inst := range insts {
		if err := ss.ingest(inst); err != nil {
			return err
		}
		if err := ss.finishInstall(inst); err != nil {
			return err
		}
		snapshotsTotal.WithLabelValues("applied").Inc()
		ss.s.log.Info("snapshot install finished after a restart", "region", inst.region.GetId(), "index", inst.index,
			"bytes", inst.meta.size(), "keys", inst.meta.keys())
	}
	names, err := ss.fs.List(ss.dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := ss.fs.RemoveAll(filepath.Join(ss.dir, n)); err != nil {
			return err
		}
	}
	return nil
}

func sameRange(a, b *metapb.Region) bool {
	return string(a.GetStartKey()) == string(b.GetStartKey()) && string(a.GetEndKey()) == string(b.GetEndKey())
}
