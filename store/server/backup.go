package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"golang.org/x/time/rate"

	"github.com/stratadb/strata/kv/backupfile"
	"github.com/stratadb/strata/kv/regionkeys"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/store/mvcc"
)

var (
	backupBytes = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "store", Name: "backup_bytes_total",
		Help: "Key+value bytes a store exported to backup files (op=export) or wrote through raft from them (op=ingest).",
	}, []string{"op"})
	backupKVs = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "store", Name: "backup_kvs_total",
		Help: "Pairs a store exported to backup files (op=export) or wrote through raft from them (op=ingest).",
	}, []string{"op"})
)

// ingestBatchBytes bounds one raft command of a KvIngest (about a raft
// message's size, raftstore's MaxSizePerMsg).
const ingestBatchBytes = 1 << 20

// KvExport implements storepb.StoreServer (kvrpcpb.ExportRequest): the
// region leader writes the pairs a read at the request's version sees as
// one backup file (kv/backupfile). Its duration is strata_store_rpc_seconds
// {method="kv_export"}.
func (s *Service) KvExport(ctx context.Context, req *kvrpcpb.ExportRequest) (*kvrpcpb.ExportResponse, error) {
	return call(ctx, "kv_export", req, gcChecked(s.gc, (*kvrpcpb.ExportRequest).GetVersion,
		func(ke *kvrpcpb.KeyError) *kvrpcpb.ExportResponse { return &kvrpcpb.ExportResponse{Error: ke} }, s.export))
}

func (s *Service) export(ctx context.Context, req *kvrpcpb.ExportRequest) (*kvrpcpb.ExportResponse, error) {
	if req.GetVersion() == 0 {
		return &kvrpcpb.ExportResponse{OtherError: "export needs a version (the backup ts)"}, nil
	}
	name := req.GetFileName()
	if req.GetDir() != "" && (name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == "..") {
		return &kvrpcpb.ExportResponse{OtherError: fmt.Sprintf("export file name %q must be a plain file name", name)}, nil
	}
	var (
		w   *backupfile.Writer
		sum backupfile.Checksum
		lo  []byte
		hi  []byte
	)
	path := filepath.Join(req.GetDir(), name)
	limit := s.exportLimit.get(req.GetRateLimitBytesPerSec())
	region, rerr, ke, err := s.st.ScanFunc(ctx, req.GetContext(), req.GetStartKey(), req.GetEndKey(), req.GetVersion(), func(k, v []byte) error {
		if req.GetDir() == "" {
			sum.Add(k, v)
			return nil
		}
		if w == nil {
			var err error
			if w, err = backupfile.Create(ctx, path, limit); err != nil {
				return err
			}
		}
		return w.Add(k, v)
	})
	if w != nil && (err != nil || rerr != nil || ke != nil) {
		w.Abort()
		w = nil
	}
	if errors.Is(err, backupfile.ErrFile) {
		return &kvrpcpb.ExportResponse{OtherError: err.Error()}, nil
	}
	if err != nil {
		return nil, err
	}
	if rerr != nil {
		return &kvrpcpb.ExportResponse{RegionError: rerr}, nil
	}
	if ke != nil {
		return &kvrpcpb.ExportResponse{Error: ke}, nil
	}
	lo = regionkeys.ClampStart(req.GetStartKey(), region)
	hi = regionkeys.ClampEnd(req.GetEndKey(), region)
	resp := &kvrpcpb.ExportResponse{StartKey: bytes.Clone(lo), EndKey: bytes.Clone(hi)}
	if w != nil {
		sum = w.Checksum()
		size, err := w.Finish()
		if err != nil {
			return &kvrpcpb.ExportResponse{OtherError: err.Error()}, nil
		}
		resp.FileName, resp.FileSize = name, size
		backupBytes.WithLabelValues("export").Add(float64(sum.Bytes))
		backupKVs.WithLabelValues("export").Add(float64(sum.KVs))
		slog.Info("backup file exported", "component", "backup", "region", region.GetId(), "file", path,
			"kvs", sum.KVs, "bytes", sum.Bytes, "file_size", size, "version", req.GetVersion())
	}
	resp.Kvs, resp.Bytes, resp.Crc64Xor = sum.KVs, sum.Bytes, sum.CRC64
	return resp, nil
}

// KvIngest implements storepb.StoreServer (kvrpcpb.IngestRequest): the
// region leader reads a backup file and proposes its pairs, clamped to the
// region, as committed Put versions in raft commands of about 1 MiB. Every
// replica applies them; nothing is side-loaded into one engine. Its
// duration is strata_store_rpc_seconds{method="kv_ingest"}.
func (s *Service) KvIngest(ctx context.Context, req *kvrpcpb.IngestRequest) (*kvrpcpb.IngestResponse, error) {
	return call(ctx, "kv_ingest", req, s.ingest)
}

func (s *Service) ingest(ctx context.Context, req *kvrpcpb.IngestRequest) (*kvrpcpb.IngestResponse, error) {
	if req.GetPath() == "" || req.GetStartVersion() == 0 || req.GetStartVersion() >= req.GetCommitVersion() {
		return &kvrpcpb.IngestResponse{Error: "ingest needs a path and 0 < start_version < commit_version"}, nil
	}
	region, rerr, err := s.store.ReadIndex(ctx, req.GetContext())
	if err != nil {
		return nil, err
	}
	start := regionkeys.ClampStart(req.GetStartKey(), region)
	if rerr == nil {
		rerr = regionkeys.CheckKey(start, region)
	}
	if rerr != nil {
		return &kvrpcpb.IngestResponse{RegionError: rerr}, nil
	}
	end := regionkeys.ClampEnd(req.GetEndKey(), region)
	resp := &kvrpcpb.IngestResponse{}
	var (
		t      mvcc.Txn
		size   int
		stop   bool
		kvs    uint64
		nbytes uint64
	)
	flush := func() error {
		if t.Len() == 0 {
			return nil
		}
		out, err := s.store.Propose(ctx, raftCmd(req.GetContext(), region, t.Writes()), 0)
		if err != nil {
			return err
		}
		if re := out.GetRegionError(); re != nil {
			resp.RegionError = re
			stop = true
			return nil
		}
		resp.Kvs, resp.Bytes = resp.Kvs+kvs, resp.Bytes+nbytes
		t.Reset()
		size, kvs, nbytes = 0, 0, 0
		return nil
	}
	err = backupfile.Read(req.GetPath(), start, end, func(k, v []byte) error {
		w := &mvcc.Write{Kind: mvcc.WritePut, StartTS: req.GetStartVersion()}
		if len(v) <= mvcc.ShortValueMaxLen {
			w.ShortValue, w.HasShortValue = bytes.Clone(v), true
		} else {
			t.PutValue(bytes.Clone(k), req.GetStartVersion(), bytes.Clone(v))
		}
		t.PutWrite(bytes.Clone(k), req.GetCommitVersion(), w)
		size += 2*len(k) + len(v) + 32
		kvs++
		nbytes += uint64(len(k) + len(v))
		if size < ingestBatchBytes {
			return nil
		}
		if err := flush(); err != nil {
			return err
		}
		if stop {
			return errIngestStopped
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	switch {
	case errors.Is(err, errIngestStopped):
	case errors.Is(err, backupfile.ErrFile):
		return &kvrpcpb.IngestResponse{Error: err.Error()}, nil
	case err != nil:
		return nil, err
	}
	backupBytes.WithLabelValues("ingest").Add(float64(resp.Bytes))
	backupKVs.WithLabelValues("ingest").Add(float64(resp.Kvs))
	return resp, nil
}

// exportLimiter is a store's one limiter of export writes: the requests
// of a backup share the rate it asked for (the last request's rate wins).
type exportLimiter struct {
	mu sync.Mutex
	l  *rate.Limiter
}

// get returns the limiter set to bytesPerSec, or nil (no limit) for 0.
func (e *exportLimiter) get(bytesPerSec uint64) *rate.Limiter {
	if bytesPerSec == 0 {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	n := backupfile.NewLimiter(bytesPerSec)
	if e.l == nil {
		e.l = n
	} else if e.l.Limit() != n.Limit() {
		e.l.SetLimit(n.Limit())
		e.l.SetBurst(n.Burst())
	}
	return e.l
}

var errIngestStopped = errors.New("server: ingest stopped by a region error")
