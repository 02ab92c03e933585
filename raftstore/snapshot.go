package raftstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
	"github.com/stratadb/strata/proto/raft_serverpb"
	"github.com/stratadb/strata/proto/storepb"
)

// Snapshots: generation and sending (this file); receiving, installing and
// recovery are in snapinstall.go.
//
// A leader's raft asks its Storage for a snapshot when a peer needs entries
// the log no longer has. The first request starts a generation off the
// Ready loop: the loop takes a Pebble snapshot at the applied index (cheap,
// consistent with it) and a goroutine writes the region's ranges, one SST
// file per non-empty key space (kv/keys.CFBounds), into a directory under
// <data dir>/snap; memory stays at the sstable writer's block buffers. raft
// gets ErrSnapshotTemporarilyUnavailable until the files are written and
// retries. raft's snapshot data is then only the snapshot's description
// (snapMeta: the region, and per file its key space, size, CRC-32C, key
// count and first and last key). The files are reused for other peers
// until the log is compacted past them or a send of them succeeds, and
// deleted once no send reads them any more (snapGen's references).
//
// The MsgSnap goes to the peer's store on its own Snapshot RPC (not the
// raft stream): the message (with the description) first, then the files'
// bytes, concatenated in the description's order, in snapshotChunkSize
// chunks, throttled by a store-wide bandwidth cap (Config.SnapshotMaxBytesPerSec);
// at most one send per destination store at a time.
//
// Generation competes for the disk with the raft log's fsyncs, which every
// write waits on: at most snapGenConcurrency regions generate at a time, their
// SST writes share a second cap of the same rate, and the files are synced
// every snapGenBytesPerSync bytes rather than in one flush at the end. A
// restarted store that needs many snapshots at once thus costs the other
// regions' commits a bounded share of the disk (TiKV's snap generator pool
// and snap-io-max-bytes-per-sec).

const (
	snapshotChunkSize   = 1 << 20
	snapGenConcurrency  = 2
	snapGenBytesPerSync = 512 << 10
)

// DefaultSnapshotMaxBytesPerSec is the default cap on the bytes per second a
// store sends snapshots at (all destinations together), like TiKV's
// snap-max-write-bytes-per-sec.
const DefaultSnapshotMaxBytesPerSec = 100 << 20

var snapCRCTable = crc32.MakeTable(crc32.Castagnoli)

// snapFile describes one SST file of a snapshot.
type snapFile struct {
	cf                raft_cmdpb.CF
	size              uint64
	crc               uint32 // CRC-32C of the file
	keys              uint64
	smallest, largest []byte // engine keys
}

func (f snapFile) name() string { return fmt.Sprintf("%d.sst", f.cf) }

// snapMeta is a snapshot's raft data: the region (first, so a receiver can
// check overlaps without decoding the rest), its files, and the GC safe
// point the sender knew when it cut the snapshot (0: none), which the
// region's data may have been collected under (gcsafepoint.go).
type snapMeta struct {
	region      *metapb.Region
	files       []snapFile
	gcSafePoint uint64
}

// snapTagGCSafePoint, where a file's key space would be, starts the last
// item of a snapshot description: uvarint gc safe point. It is written
// only when the safe point is set; a store built before it refuses such a
// description as corrupt (the send fails and raft retries it).
const snapTagGCSafePoint = 0xff

func (m *snapMeta) size() uint64 {
	var n uint64
	for _, f := range m.files {
		n += f.size
	}
	return n
}

func (m *snapMeta) keys() uint64 {
	var n uint64
	for _, f := range m.files {
		n += f.keys
	}
	return n
}

// encode is (uvarint len, region) then per file (uvarint cf, uvarint size,
// uvarint keys, 4-byte CRC, uvarint len, smallest, uvarint len, largest),
// then, when set, (uvarint snapTagGCSafePoint, uvarint gc safe point).
func (m *snapMeta) encode() ([]byte, error) {
	rb, err := proto.Marshal(m.region)
	if err != nil {
		return nil, fmt.Errorf("raftstore: marshal snapshot region: %w", err)
	}
	out := binary.AppendUvarint(nil, uint64(len(rb)))
	out = append(out, rb...)
	for _, f := range m.files {
		out = binary.AppendUvarint(out, uint64(f.cf))
		out = binary.AppendUvarint(out, f.size)
		out = binary.AppendUvarint(out, f.keys)
		out = binary.BigEndian.AppendUint32(out, f.crc)
		out = binary.AppendUvarint(out, uint64(len(f.smallest)))
		out = append(out, f.smallest...)
		out = binary.AppendUvarint(out, uint64(len(f.largest)))
		out = append(out, f.largest...)
	}
	if m.gcSafePoint != 0 {
		out = binary.AppendUvarint(out, snapTagGCSafePoint)
		out = binary.AppendUvarint(out, m.gcSafePoint)
	}
	return out, nil
}

// decodeSnapMeta decodes and validates a snapshot's data: every file's keys
// lie in its key space's range of the region.
func decodeSnapMeta(data []byte) (*snapMeta, error) {
	rb, rest, err := snapField(data)
	if err != nil {
		return nil, err
	}
	m := &snapMeta{region: &metapb.Region{}}
	if err := proto.Unmarshal(rb, m.region); err != nil {
		return nil, fmt.Errorf("%w: snapshot region: %v", ErrCorrupt, err)
	}
	uv := func() uint64 {
		v, n := binary.Uvarint(rest)
		if n <= 0 {
			err = fmt.Errorf("%w: truncated snapshot description", ErrCorrupt)
			return 0
		}
		rest = rest[n:]
		return v
	}
	seen := map[raft_cmdpb.CF]bool{}
	for len(rest) > 0 && err == nil {
		tag := uv()
		if tag == snapTagGCSafePoint && err == nil {
			if m.gcSafePoint = uv(); err == nil && len(rest) > 0 {
				err = fmt.Errorf("%w: snapshot description continues after its gc safe point", ErrCorrupt)
			}
			break
		}
		f := snapFile{cf: raft_cmdpb.CF(tag)}
		f.size = uv()
		f.keys = uv()
		if err != nil || len(rest) < 4 {
			return nil, fmt.Errorf("%w: truncated snapshot description", ErrCorrupt)
		}
		f.crc = binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if f.smallest, rest, err = snapField(rest); err != nil {
			return nil, err
		}
		if f.largest, rest, err = snapField(rest); err != nil {
			return nil, err
		}
		lo, hi := keys.CFBounds(f.cf, m.region.GetStartKey(), m.region.GetEndKey())
		if _, ok := raft_cmdpb.CF_name[int32(f.cf)]; !ok || seen[f.cf] || f.size == 0 ||
			bytes.Compare(f.smallest, lo) < 0 || bytes.Compare(f.largest, hi) >= 0 || bytes.Compare(f.smallest, f.largest) > 0 {
			return nil, fmt.Errorf("%w: snapshot file of key space %v with keys [%x, %x] outside region %d", ErrCorrupt, f.cf, f.smallest, f.largest, m.region.GetId())
		}
		seen[f.cf] = true
		m.files = append(m.files, f)
	}
	return m, err
}

func snapField(b []byte) (field, rest []byte, err error) {
	n, m := binary.Uvarint(b)
	if m <= 0 || uint64(len(b)-m) < n {
		return nil, nil, fmt.Errorf("%w: truncated snapshot data", ErrCorrupt)
	}
	return b[m : m+int(n)], b[m+int(n):], nil
}

// snapGen is a generated (or in-flight) snapshot of a region: its files in
// dir. refs counts the peer storage's hold (until it drops the snapshot)
// and each send reading the files; the last release deletes them.
type snapGen struct {
	ss          *snapshotSender
	index, term uint64
	cs          *raftpb.ConfState // the configuration at index
	confVer     uint64            // the region's conf_ver at index
	dir         string
	refs        atomic.Int32
	done        chan struct{} // closed when meta/data/err are set
	meta        *snapMeta
	data        []byte // meta encoded: raft's snapshot data
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

func (g *snapGen) release() {
	if g.refs.Add(-1) == 0 {
		g.ss.removeDir(g.dir)
	}
}

// dropSnap lets go of the generated snapshot (its files are deleted once no
// send reads them).
func (ps *peerStorage) dropSnap() {
	if g := ps.snap; g != nil {
		ps.snap = nil
		if g.isDone() {
			g.release()
			return
		}
		g.ss.wg.Add(1)
		go func() { // generation still running
			defer g.ss.wg.Done()
			<-g.done
			g.release()
		}()
	}
}

// Snapshot implements raft.Storage (see the comment at the top).
func (ps *peerStorage) Snapshot() (*raftpb.Snapshot, error) {
	if g := ps.snap; g != nil {
		select {
		case <-g.done:
			if g.err == nil && g.index >= ps.apply.truncatedIndex && g.confVer == ps.region.GetRegionEpoch().GetConfVer() {
				return &raftpb.Snapshot{Data: g.data, Metadata: &raftpb.SnapshotMetadata{
					Index: new(g.index), Term: new(g.term), ConfState: g.cs,
				}}, nil
			}
			ps.dropSnap() // failed, too old or of an older configuration: make a new one
		default:
			return nil, raft.ErrSnapshotTemporarilyUnavailable
		}
	}
	if ps.snaps == nil {
		return nil, errors.New("raftstore: no snapshot directory")
	}
	index := ps.apply.applied
	term, err := ps.Term(index)
	if err != nil {
		return nil, err
	}
	dbSnap := ps.db.NewSnapshot()
	ss := ps.snaps
	// After the engine snapshot: at least every safe point its data was
	// collected under (those are raised before their deletes commit).
	gcSafePoint := ss.s.GCSafePoint()
	g := &snapGen{ss: ss, index: index, term: term, cs: ps.confState(), confVer: ps.region.GetRegionEpoch().GetConfVer(),
		dir: ss.newDir("gen", ps.regionID, term, index), done: make(chan struct{})}
	g.refs.Store(1)
	ps.snap = g
	region := proto.Clone(ps.region).(*metapb.Region)
	gen := func() {
		start := time.Now()
		g.meta, g.err = ss.generate(dbSnap, region, g.dir)
		dbSnap.Close()
		if g.err == nil {
			g.meta.gcSafePoint = gcSafePoint
			g.data, g.err = g.meta.encode()
		}
		if g.err != nil {
			ss.s.log.Warn("generate snapshot", "region", region.GetId(), "err", g.err)
		} else {
			ss.addDisk(g.dir, "generated", g.meta.size())
			snapshotGenerateSeconds.Observe(time.Since(start).Seconds())
			snapshotBytes.WithLabelValues("generated").Add(float64(g.meta.size()))
		}
		close(g.done)
	}
	if ss.manual {
		gen()
		return ps.Snapshot()
	}
	ss.wg.Add(1) // Store.Stop waits for it before the engine closes
	go func() {
		defer ss.wg.Done()
		select {
		case ss.genSem <- struct{}{}:
			defer func() { <-ss.genSem }()
		case <-ss.s.ctx.Done():
			dbSnap.Close()
			g.err = ErrStopped
			close(g.done)
			return
		}
		gen()
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

// generate writes region's user data in r, one SST per non-empty key space,
// into dir (created). On error dir is removed.
func (ss *snapshotSender) generate(r pebble.Reader, region *metapb.Region, dir string) (*snapMeta, error) {
	if err := ss.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	m := &snapMeta{region: region}
	for _, cf := range keys.CFs {
		lo, hi := keys.CFBounds(cf, region.GetStartKey(), region.GetEndKey())
		it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			ss.fs.RemoveAll(dir)
			return nil, err
		}
		f, ok, err := ss.writeSST(filepath.Join(dir, snapFile{cf: cf}.name()), it)
		err = errors.Join(err, it.Close())
		if err != nil {
			ss.fs.RemoveAll(dir)
			return nil, fmt.Errorf("raftstore: write snapshot file of region %d: %w", region.GetId(), err)
		}
		if ok {
			f.cf = cf
			m.files = append(m.files, f)
		}
	}
	return m, nil
}

// writeSST writes it's keys (from First) to a new SST at path; ok is false
// (and nothing is written) when it is empty.
func (ss *snapshotSender) writeSST(path string, it *pebble.Iterator) (f snapFile, ok bool, err error) {
	if !it.First() {
		return f, false, it.Error()
	}
	file, err := ss.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return f, false, err
	}
	file = vfs.NewSyncingFile(file, vfs.SyncingFileOptions{BytesPerSync: snapGenBytesPerSync})
	cw := &crcWritable{w: objstorageprovider.NewFileWritable(file), crc: crc32.New(snapCRCTable), limit: ss.genLimit, ctx: ss.s.ctx}
	w := sstable.NewWriter(cw, ss.wopts)
	f.smallest = bytes.Clone(it.Key())
	var last []byte
	for valid := true; valid; valid = it.Next() {
		v, err := it.ValueAndErr()
		if err == nil {
			err = w.Set(it.Key(), v)
		}
		if err != nil {
			w.Close()
			return f, false, err
		}
		last = append(last[:0], it.Key()...)
		f.keys++
	}
	if err := errors.Join(it.Error(), w.Close()); err != nil { // Close syncs the file
		return f, false, err
	}
	f.largest, f.size, f.crc = last, cw.n, cw.crc.Sum32()
	return f, true, nil
}

// crcWritable checksums what the sstable writer writes and paces it by
// limit (nil: none).
type crcWritable struct {
	w     objstorage.Writable
	crc   hash.Hash32
	n     uint64
	limit *rate.Limiter
	ctx   context.Context
}

func (c *crcWritable) Write(p []byte) error {
	if c.limit != nil {
		for n := len(p); n > 0; {
			k := min(n, c.limit.Burst())
			if err := c.limit.WaitN(c.ctx, k); err != nil {
				return err
			}
			n -= k
		}
	}
	c.crc.Write(p) // before w, which may mangle p
	c.n += uint64(len(p))
	return c.w.Write(p)
}
func (c *crcWritable) Finish() error { return c.w.Finish() }
func (c *crcWritable) Abort()        { c.w.Abort() }

// snapshotStatus reports a snapshot send's outcome to the loop (raft's
// ReportSnapshot).
type snapshotStatus struct {
	regionID, peerID uint64
	ok               bool
}

// snapshotSender owns the store's snapshot files (<data dir>/snap):
// generation, sending (at most one send per destination store at a time;
// a second one for a store is dropped and reported failed, raft asks
// again), receiving and installing. Peer storages share it.
type snapshotSender struct {
	s      *Store
	fs     vfs.FS
	dir    string
	manual bool // generate, send and install synchronously (harness)
	wopts  sstable.WriterOptions
	limit  *rate.Limiter // send bandwidth cap, nil: none
	// genLimit caps generation's writes (nil: none); genSem bounds the
	// generations running at once.
	genLimit *rate.Limiter
	genSem   chan struct{}
	seq      atomic.Uint64 // unique directory names
	// holdIngest, when set (tests), is asked before an install's ingest:
	// true leaves the install pending as a crash right after the
	// "applying" state was persisted would.
	holdIngest func(regionID uint64) bool

	mu     sync.Mutex
	busy   map[uint64]bool
	onDisk map[string]snapDirStat // directories with files, by path
	wg     sync.WaitGroup         // generations, sends and ingests in flight
}

type snapDirStat struct {
	kind  string // generated, received
	bytes uint64
}

// open sets the sender up for s (after the engine opened), creates the
// snapshot directory and finishes installs a crash interrupted.
func (ss *snapshotSender) open(s *Store) error {
	ss.s, ss.manual = s, s.cfg.manual
	ss.fs = s.cfg.fs
	if ss.fs == nil {
		ss.fs = vfs.Default
	}
	ss.dir = filepath.Join(s.cfg.DataDir, "snap")
	ss.wopts = snapshotWriterOptions(s.db.TableFormat())
	ss.onDisk = map[string]snapDirStat{}
	if bps := s.cfg.SnapshotMaxBytesPerSec; bps > 0 && !ss.manual {
		ss.limit = rate.NewLimiter(rate.Limit(bps), int(min(bps, snapshotChunkSize)))
		ss.genLimit = rate.NewLimiter(rate.Limit(bps), int(min(bps, snapshotChunkSize)))
	}
	ss.genSem = make(chan struct{}, snapGenConcurrency)
	if err := ss.fs.MkdirAll(ss.dir, 0o755); err != nil {
		return fmt.Errorf("raftstore: snapshot directory: %w", err)
	}
	if err := syncDir(ss.fs, s.cfg.DataDir); err != nil {
		return err
	}
	return ss.recover()
}

// newDir names a new snapshot directory (not created).
func (ss *snapshotSender) newDir(kind string, regionID, term, index uint64) string {
	return filepath.Join(ss.dir, fmt.Sprintf("%s_%d_%d_%d_%d", kind, regionID, term, index, ss.seq.Add(1)))
}

func (ss *snapshotSender) addDisk(dir, kind string, n uint64) {
	ss.mu.Lock()
	ss.onDisk[dir] = snapDirStat{kind: kind, bytes: n}
	ss.mu.Unlock()
	snapshotDiskBytes.WithLabelValues(kind).Add(float64(n))
}

// removeDir deletes a snapshot directory.
func (ss *snapshotSender) removeDir(dir string) {
	if dir == "" {
		return
	}
	ss.mu.Lock()
	st, ok := ss.onDisk[dir]
	delete(ss.onDisk, dir)
	ss.mu.Unlock()
	if ok {
		snapshotDiskBytes.WithLabelValues(st.kind).Sub(float64(st.bytes))
	}
	if err := ss.fs.RemoveAll(dir); err != nil {
		ss.s.log.Warn("remove snapshot files", "dir", dir, "err", err)
	}
}

// dirsOnDisk returns the snapshot directories with files (tests).
func (ss *snapshotSender) dirsOnDisk() []string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var out []string
	for d := range ss.onDisk {
		out = append(out, strings.TrimPrefix(d, ss.dir+"/"))
	}
	return out
}

func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// sendSnapshot sends a MsgSnap (its data: the snapshot's description) and
// the generated snapshot's files on the Snapshot RPC.
func (s *Store) sendSnapshot(p *peer, to uint64, m *raftpb.Message) {
	if f := s.raftFilter.Load(); f != nil && (*f)(to) {
		p.rn.ReportSnapshot(m.GetTo(), raft.SnapshotFailure)
		return
	}
	g := p.ps.snap
	md := m.GetSnapshot().GetMetadata()
	if g == nil || !g.isDone() || g.err != nil || g.index != md.GetIndex() || g.term != md.GetTerm() {
		p.rn.ReportSnapshot(m.GetTo(), raft.SnapshotFailure) // not the files raft was given: ask again
		return
	}
	msg, err := proto.Marshal(m)
	if err != nil {
		s.fatal("marshal snapshot message", err)
	}
	g.refs.Add(1) // released by the send
	s.snaps.send(to, &raft_serverpb.RaftMessage{
		RegionId: p.region.GetId(), FromPeer: p.meta, ToPeer: &metapb.Peer{Id: m.GetTo(), StoreId: to},
		RegionEpoch: p.region.GetRegionEpoch(), StartKey: p.region.GetStartKey(), EndKey: p.region.GetEndKey(),
		Message: msg,
	}, g)
}

// send starts sending m and g's files to storeID in the background (in
// manual mode at once); it releases g when done.
func (ss *snapshotSender) send(storeID uint64, m *raft_serverpb.RaftMessage, g *snapGen) {
	ss.mu.Lock()
	if ss.busy == nil {
		ss.busy = map[uint64]bool{}
	}
	if ss.busy[storeID] || ss.s.ctx.Err() != nil {
		ss.mu.Unlock()
		g.release()
		ss.report(m, false)
		return
	}
	ss.busy[storeID] = true
	ss.wg.Add(1)
	ss.mu.Unlock()
	run := func() {
		defer ss.wg.Done()
		defer g.release()
		start := time.Now()
		var err error
		if net := ss.s.cfg.net; net != nil {
			// In process (harness): delivered synchronously, the outcome
			// reported to the next loop iteration.
			err = net.sendSnapshot(ss.s.id, storeID, m, func(send func(*raft_serverpb.SnapshotChunk) error) error {
				return ss.writeChunks(context.Background(), m, g, send)
			})
		} else {
			err = ss.stream(storeID, m, g)
		}
		ss.mu.Lock()
		delete(ss.busy, storeID)
		ss.mu.Unlock()
		size := g.meta.size()
		if err != nil {
			snapshotsTotal.WithLabelValues("send_failed").Inc()
			ss.s.log.Warn("send snapshot", "region", m.GetRegionId(), "to_store", storeID, "bytes", size, "err", err)
		} else {
			snapshotsTotal.WithLabelValues("sent").Inc()
			snapshotBytes.WithLabelValues("sent").Add(float64(size))
			snapshotSendSeconds.Observe(time.Since(start).Seconds())
			ss.s.log.Info("snapshot sent", "region", m.GetRegionId(), "to_store", storeID, "bytes", size,
				"keys", g.meta.keys(), "files", len(g.meta.files), "took", time.Since(start))
		}
		ss.report(m, err == nil)
	}
	if ss.manual {
		run()
		return
	}
	go run()
}

func (ss *snapshotSender) report(m *raft_serverpb.RaftMessage, ok bool) {
	st := snapshotStatus{regionID: m.GetRegionId(), peerID: m.GetToPeer().GetId(), ok: ok}
	ss.s.inbox.push(func(in *inboxMsgs) { in.snapStatus = append(in.snapStatus, st) })
}

// writeChunks hands the Snapshot RPC's chunks to send: m, then g's files in
// snapshotChunkSize pieces at the bandwidth cap.
func (ss *snapshotSender) writeChunks(ctx context.Context, m *raft_serverpb.RaftMessage, g *snapGen, send func(*raft_serverpb.SnapshotChunk) error) error {
	if err := send(&raft_serverpb.SnapshotChunk{Message: m}); err != nil {
		return err
	}
	for _, f := range g.meta.files {
		file, err := ss.fs.Open(filepath.Join(g.dir, f.name()))
		if err != nil {
			return err
		}
		for left := f.size; left > 0; {
			n := min(left, snapshotChunkSize)
			buf := make([]byte, n) // a new one each time: gRPC may hold on to a sent message
			if _, err := io.ReadFull(file, buf); err != nil {
				file.Close()
				return fmt.Errorf("raftstore: read snapshot file: %w", err)
			}
			if ss.limit != nil {
				if err := ss.limit.WaitN(ctx, int(n)); err != nil {
					file.Close()
					return err
				}
			}
			if err := send(&raft_serverpb.SnapshotChunk{Data: buf}); err != nil {
				file.Close()
				return err
			}
			left -= n
		}
		if err := file.Close(); err != nil {
			return err
		}
	}
	return nil
}

func (ss *snapshotSender) stream(storeID uint64, m *raft_serverpb.RaftMessage, g *snapGen) error {
	// Long enough for the largest regions at the bandwidth cap.
	ctx, cancel := context.WithTimeout(ss.s.ctx, 30*time.Minute)
	defer cancel()
	st, err := ss.s.pd.GetStore(ctx, storeID)
	if err != nil {
		return err
	}
	conn, err := grpc.NewClient(st.GetAddress(), ss.s.cfg.Security.DialOption())
	if err != nil {
		return err
	}
	defer conn.Close()
	stream, err := storepb.NewStoreClient(conn).Snapshot(ctx)
	if err != nil {
		return err
	}
	err = ss.writeChunks(ctx, m, g, func(c *raft_serverpb.SnapshotChunk) error { return stream.Send(c) })
	if errors.Is(err, io.EOF) {
		_, err = stream.CloseAndRecv() // the receiver's error
		return err
	}
	if err != nil {
		return err
	}
	_, err = stream.CloseAndRecv()
	return err
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
