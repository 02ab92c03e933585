package raftstore

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"golang.org/x/time/rate"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
	"github.com/stratadb/strata/proto/raft_serverpb"
)

// engineStore is a Store with only an engine and snapshot files on fs (a new
// MemFS when nil), enough for the snapshot code; manual: synchronous.
func engineStore(t *testing.T, manual bool) *Store { return engineStoreOn(t, vfs.NewMem(), manual) }

func engineStoreOn(t *testing.T, fs vfs.FS, manual bool) *Store {
	opts := engineOptions()
	opts.FS = fs
	db, err := pebble.Open("/db", opts)
	require.NoError(t, err)
	s := &Store{db: db, log: slog.New(slog.DiscardHandler), cfg: Config{DataDir: "/db", fs: fs, manual: manual}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	require.NoError(t, s.snaps.open(s))
	t.Cleanup(func() {
		s.snaps.wg.Wait()
		if s.db != nil { // nil: closed by the test
			s.db.Close()
		}
	})
	return s
}

// transferSnapshot generates a snapshot of region at (index, term) from
// src and has dst receive it as the Snapshot RPC would deliver it.
func transferSnapshot(t *testing.T, src, dst *Store, region *metapb.Region, index, term uint64, cs *raftpb.ConfState) (*raftpb.Snapshot, receivedSnap) {
	dir := src.snaps.newDir("gen", region.GetId(), term, index)
	meta, err := src.snaps.generate(src.db, region, dir)
	require.NoError(t, err)
	data, err := meta.encode()
	require.NoError(t, err)
	g := &snapGen{ss: &src.snaps, index: index, term: term, dir: dir, meta: meta, data: data, done: make(chan struct{})}
	g.refs.Store(1)
	close(g.done)
	snap := &raftpb.Snapshot{Data: data, Metadata: &raftpb.SnapshotMetadata{Index: new(index), Term: new(term), ConfState: cs}}
	msg, err := proto.Marshal(&raftpb.Message{Type: raftpb.MessageType_MsgSnap.Enum(), To: new(uint64(2)), From: new(uint64(1)), Snapshot: snap})
	require.NoError(t, err)
	rm := &raft_serverpb.RaftMessage{RegionId: region.GetId(), Message: msg}
	chunks := sendChunks(t, src, rm, g)
	rs, err := dst.receiveSnapshot(recvFrom(chunks))
	require.NoError(t, err)
	g.release()
	return snap, rs
}

func sendChunks(t *testing.T, src *Store, rm *raft_serverpb.RaftMessage, g *snapGen) []*raft_serverpb.SnapshotChunk {
	var chunks []*raft_serverpb.SnapshotChunk
	require.NoError(t, src.snaps.writeChunks(context.Background(), rm, g, func(c *raft_serverpb.SnapshotChunk) error {
		chunks = append(chunks, c)
		return nil
	}))
	return chunks
}

func recvFrom(chunks []*raft_serverpb.SnapshotChunk) func() (*raft_serverpb.SnapshotChunk, error) {
	return func() (*raft_serverpb.SnapshotChunk, error) {
		if len(chunks) == 0 {
			return nil, io.EOF
		}
		c := chunks[0]
		chunks = chunks[1:]
		return c, nil
	}
}

func ekey(cf raft_cmdpb.CF, k string) []byte {
	return keys.EngineKey(nil, cf, keys.EncodeVersioned(nil, []byte(k), 7))
}

func userData(t *testing.T, db *pebble.DB) map[string]string {
	got := map[string]string{}
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{'a'}, UpperBound: []byte{'{'}})
	require.NoError(t, err)
	for valid := it.First(); valid; valid = it.Next() {
		got[string(it.Key())] = string(it.Value())
	}
	require.NoError(t, it.Close())
	return got
}

// snapshotFixture: a source engine with keys a, b, c, c\xff, d in every
// key space, a destination peer of region [b, d) with stale data and a
// log, and the snapshot at index 40 term 8 received by the destination.
type snapshotFixture struct {
	region   *metapb.Region
	src, dst *Store
	ps       *peerStorage
	snap     *raftpb.Snapshot
	want     map[string]string
}

func newSnapshotFixture(t *testing.T, dstFS vfs.FS) *snapshotFixture {
	f := &snapshotFixture{region: testRegion()}
	f.region.StartKey, f.region.EndKey = []byte("b"), []byte("d")
	f.src = engineStore(t, true)
	for _, k := range []string{"a", "b", "c", "c\xff", "d"} {
		for _, cf := range keys.CFs {
			require.NoError(t, f.src.db.Set(ekey(cf, k), []byte("src-"+k), nil))
		}
	}
	f.dst = engineStoreOn(t, dstFS, true)
	b := f.dst.db.NewBatch()
	require.NoError(t, writeInitialState(b, f.region))
	require.NoError(t, b.Commit(pebble.Sync))
	for _, k := range []string{"a", "b", "bb", "d"} { // bb: stale, must go
		require.NoError(t, f.dst.db.Set(ekey(raft_cmdpb.CF_WRITE, k), []byte("old-"+k), nil))
	}
	var err error
	f.ps, err = loadPeerStorage(f.dst.db, f.region)
	require.NoError(t, err)
	f.ps.snaps = &f.dst.snaps
	persist(t, f.ps, ents(6, 6, 9), nil)
	var rs receivedSnap
	f.snap, rs = transferSnapshot(t, f.src, f.dst, f.region, 40, 8, f.ps.confState())
	f.ps.addReceived(rs)
	f.want = map[string]string{
		string(ekey(raft_cmdpb.CF_WRITE, "a")): "old-a", // outside the region: untouched
		string(ekey(raft_cmdpb.CF_WRITE, "d")): "old-d",
	}
	for _, k := range []string{"b", "c", "c\xff"} {
		for _, cf := range keys.CFs {
			f.want[string(ekey(cf, k))] = "src-" + k
		}
	}
	return f
}

// writeApplying commits the first half of the install: the raft state
// with the region "applying".
func (f *snapshotFixture) writeApplying(t *testing.T) {
	b := f.dst.db.NewBatch()
	require.NoError(t, f.ps.writeSnapshot(b, f.snap))
	require.NoError(t, b.Commit(pebble.Sync))
	f.ps.snapshotPersisted(f.snap)
	require.True(t, f.ps.installing())
	require.Equal(t, peerStateApplying, regionStateOf(t, f.dst.db, f.region.GetId()))
}

func regionStateOf(t *testing.T, db *pebble.DB, id uint64) byte {
	v, closer, err := db.Get(regionStateKey(id))
	require.NoError(t, err)
	defer closer.Close()
	state, _, err := decodeRegionState(v)
	require.NoError(t, err)
	return state
}

// checkInstalled: the region holds exactly the snapshot's data, the log is
// gone, applied = truncated = 40, the region is normal and no snapshot
// file is left.
func (f *snapshotFixture) checkInstalled(t *testing.T, db *pebble.DB, snaps *snapshotSender) {
	require.Equal(t, f.want, userData(t, db))
	require.Equal(t, peerStateNormal, regionStateOf(t, db, f.region.GetId()))
	_, _, err := db.Get(snapApplyKey(f.region.GetId()))
	require.ErrorIs(t, err, pebble.ErrNotFound)
	ps := must2(loadPeerStorage(db, f.region))
	first, _ := ps.FirstIndex()
	last, _ := ps.LastIndex()
	require.Equal(t, uint64(41), first)
	require.Equal(t, uint64(40), last)
	require.Equal(t, uint64(40), ps.apply.applied)
	term, err := ps.Term(40)
	require.NoError(t, err)
	require.Equal(t, uint64(8), term)
	_, err = ps.Entries(6, 10, ^uint64(0))
	require.ErrorIs(t, err, raft.ErrCompacted)
	require.Empty(t, snaps.dirsOnDisk())
	names, err := snaps.fs.List(snaps.dir)
	require.NoError(t, err)
	require.Empty(t, names)
}

// TestSnapshotRoundTrip: a snapshot's files hold exactly the region's keys
// in every key space; received and installed (range deletion in the synced
// batch, then ingest) they replace the region's data (and nothing outside
// it), drop the log and set applied = truncated = its index.
func TestSnapshotRoundTrip(t *testing.T) {
	f := newSnapshotFixture(t, vfs.NewMem())
	f.writeApplying(t)
	require.NoError(t, f.dst.snaps.ingest(f.ps.install))
	require.NoError(t, f.dst.snaps.finishInstall(f.ps.install))
	f.checkInstalled(t, f.dst.db, &f.dst.snaps)
}

// TestSnapshotInstallRecovery: a store stopped after the "applying" state
// was persisted, or after the ingest but before the region was marked
// normal, finishes the install from the kept files when it opens again.
func TestSnapshotInstallRecovery(t *testing.T) {
	for _, ingested := range []bool{false, true} {
		fs := vfs.NewMem()
		f := newSnapshotFixture(t, fs)
		f.writeApplying(t)
		if ingested {
			require.NoError(t, f.dst.snaps.ingest(f.ps.install))
		}
		require.NoError(t, f.dst.db.Close())
		f.dst.db = nil
		s := engineStoreOn(t, fs, true) // Open runs recover
		f.checkInstalled(t, s.db, &s.snaps)
	}
}

// TestSnapshotCorruption: files that do not match their description, a
// description with keys outside its region and a snapshot of another
// region are refused, and leave no file behind.
func TestSnapshotCorruption(t *testing.T) {
	src, dst := engineStore(t, true), engineStore(t, true)
	region := testRegion()
	region.StartKey, region.EndKey = []byte("b"), []byte("d")
	for _, k := range []string{"a", "b", "c", "d"} {
		require.NoError(t, src.db.Set(ekey(raft_cmdpb.CF_DEFAULT, k), []byte("v-"+k), nil))
	}
	dir := src.snaps.newDir("gen", region.GetId(), 8, 40)
	meta, err := src.snaps.generate(src.db, region, dir)
	require.NoError(t, err)
	require.Len(t, meta.files, 1)
	data := must(meta.encode())
	g := &snapGen{ss: &src.snaps, dir: dir, meta: meta, data: data}
	g.refs.Store(1)
	rmFor := func(data []byte) *raft_serverpb.RaftMessage {
		snap := &raftpb.Snapshot{Data: data, Metadata: &raftpb.SnapshotMetadata{Index: new(uint64(40)), Term: new(uint64(8))}}
		msg := must(proto.Marshal(&raftpb.Message{Type: raftpb.MessageType_MsgSnap.Enum(), Snapshot: snap}))
		return &raft_serverpb.RaftMessage{RegionId: region.GetId(), Message: msg}
	}

	chunks := sendChunks(t, src, rmFor(data), g)
	bad := proto.Clone(chunks[1]).(*raft_serverpb.SnapshotChunk)
	bad.Data[len(bad.Data)/2] ^= 1
	_, err = dst.receiveSnapshot(recvFrom([]*raft_serverpb.SnapshotChunk{chunks[0], bad}))
	require.ErrorIs(t, err, ErrCorrupt)
	_, err = dst.receiveSnapshot(recvFrom(chunks[:1])) // a file missing
	require.ErrorIs(t, err, ErrCorrupt)

	// The same file described as a narrower region's: "b" lies outside.
	narrow := proto.Clone(meta.region).(*metapb.Region)
	narrow.StartKey = []byte("bb")
	_, err = dst.receiveSnapshot(recvFrom(sendChunks(t, src, rmFor(must((&snapMeta{region: narrow, files: meta.files}).encode())), g)))
	require.ErrorIs(t, err, ErrCorrupt)
	// A snapshot of another region than the message's.
	other := proto.Clone(meta.region).(*metapb.Region)
	other.Id++
	_, err = dst.receiveSnapshot(recvFrom(sendChunks(t, src, rmFor(must((&snapMeta{region: other, files: meta.files}).encode())), g)))
	require.ErrorIs(t, err, ErrCorrupt)
	names, err := dst.snaps.fs.List(dst.snaps.dir)
	require.NoError(t, err)
	require.Empty(t, names)
	g.release()
	require.Empty(t, src.snaps.dirsOnDisk())
}

func must2[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestSnapshotGenerationPaced: generation writes its files no faster than
// the store's cap (beyond the limiter's burst), so a burst of snapshot
// generations cannot take the disk from the raft log's fsyncs.
func TestSnapshotGenerationPaced(t *testing.T) {
	s := engineStore(t, true)
	const genRate = 8 << 20
	s.snaps.genLimit = rate.NewLimiter(genRate, snapshotChunkSize)
	rnd := mrand.New(mrand.NewPCG(1, 2))
	val := make([]byte, 4<<10)
	for i := range 768 { // 3 MiB of incompressible values
		for j := range val {
			val[j] = byte(rnd.Uint32())
		}
		require.NoError(t, s.db.Set(ekey(raft_cmdpb.CF_DEFAULT, fmt.Sprintf("k%04d", i)), val, nil))
	}
	region := testRegion()
	start := time.Now()
	meta, err := s.snaps.generate(s.db, region, s.snaps.newDir("gen", region.GetId(), 1, 1))
	require.NoError(t, err)
	elapsed := time.Since(start)
	require.Greater(t, meta.size(), uint64(3<<20))
	floor := time.Duration(float64(meta.size()-snapshotChunkSize) / genRate * float64(time.Second))
	require.GreaterOrEqual(t, elapsed, floor, "wrote %d bytes", meta.size())
}
