package server

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv/backupfile"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
)

func (c *testCluster) export(req *kvrpcpb.ExportRequest) *kvrpcpb.ExportResponse {
	var resp *kvrpcpb.ExportResponse
	c.retry(func(n *testNode) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req.Context = c.reqCtx()
		var err error
		resp, err = n.client.KvExport(ctx, req)
		return err == nil && !retryable(resp.GetRegionError())
	})
	return resp
}

func (c *testCluster) ingest(req *kvrpcpb.IngestRequest) *kvrpcpb.IngestResponse {
	var resp *kvrpcpb.IngestResponse
	c.retry(func(n *testNode) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req.Context = c.reqCtx()
		var err error
		resp, err = n.client.KvIngest(ctx, req)
		return err == nil && !retryable(resp.GetRegionError())
	})
	return resp
}

// TestExportIngest: KvExport writes exactly the pairs a read at its
// version sees (older and newer versions, deletions and keys outside the
// range left out) with their checksum; a lock at or below the version
// stops it with the lock; without a directory it only checksums.
// KvIngest of the file into another range of keys writes them through
// raft on every replica as versions readable at the commit ts, and again
// harmlessly.
func TestExportIngest(t *testing.T) {
	c := newTestCluster(t)
	long := strings.Repeat("L", 600) // stored in DEFAULT
	for i := range 20 {
		c.put(fmt.Sprintf("k%02d", i), "old")
	}
	snap := c.nextTS()
	want := map[string]string{}
	var sum backupfile.Checksum
	for i := range 20 {
		k := fmt.Sprintf("k%02d", i)
		v := fmt.Sprintf("v%d", i)
		if i%5 == 0 {
			v = long
		}
		c.put(k, v)
		want[k] = v
		sum.Add([]byte(k), []byte(v))
	}
	c.put("j", "outside")
	backupTS := c.nextTS()
	c.put("k03", "newer") // after the backup ts

	dir := t.TempDir()
	resp := c.export(&kvrpcpb.ExportRequest{StartKey: []byte("k"), EndKey: []byte("l"), Version: backupTS, Dir: dir, FileName: "f1.sst", RateLimitBytesPerSec: 1 << 20})
	require.Nil(t, resp.GetError())
	require.Empty(t, resp.GetOtherError())
	require.Equal(t, "f1.sst", resp.GetFileName())
	require.Equal(t, sum, backupfile.Checksum{KVs: resp.GetKvs(), Bytes: resp.GetBytes(), CRC64: resp.GetCrc64Xor()})
	got := map[string]string{}
	require.NoError(t, backupfile.Read(filepath.Join(dir, "f1.sst"), nil, nil, func(k, v []byte) error {
		got[string(k)] = string(v)
		return nil
	}))
	require.Equal(t, want, got)

	// Checksum only: the same numbers, no file; an older snapshot differs.
	cs := c.export(&kvrpcpb.ExportRequest{StartKey: []byte("k"), EndKey: []byte("l"), Version: backupTS})
	require.Empty(t, cs.GetFileName())
	require.Equal(t, sum.CRC64, cs.GetCrc64Xor())
	old := c.export(&kvrpcpb.ExportRequest{StartKey: []byte("k"), EndKey: []byte("l"), Version: snap})
	require.Equal(t, uint64(20), old.GetKvs())
	require.NotEqual(t, sum.CRC64, old.GetCrc64Xor())

	// A file name with a path is refused.
	bad := c.export(&kvrpcpb.ExportRequest{StartKey: []byte("k"), EndKey: []byte("l"), Version: backupTS, Dir: dir, FileName: "../x.sst"})
	require.Contains(t, bad.GetOtherError(), "plain file name")

	// A lock below the version stops the export with it.
	lockTS := c.nextTS()
	c.retry(func(n *testNode) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		r, err := n.client.KvPrewrite(ctx, &kvrpcpb.PrewriteRequest{Context: c.reqCtx(), PrimaryLock: []byte("k07"),
			Mutations: []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte("k07"), Value: []byte("locked")}}, StartVersion: lockTS, LockTtl: 60000, TxnSize: 1})
		return err == nil && !retryable(r.GetRegionError())
	})
	locked := c.export(&kvrpcpb.ExportRequest{StartKey: []byte("k"), EndKey: []byte("l"), Version: c.nextTS(), Dir: dir, FileName: "f2.sst"})
	require.Equal(t, []byte("k07"), locked.GetError().GetLocked().GetKey())
	require.NoFileExists(t, filepath.Join(dir, "f2.sst"), "a failed export leaves no file")

	// Ingest: the file's pairs in [k, k10) become versions at commit ts.
	start, commit := c.nextTS(), c.nextTS()
	in := c.ingest(&kvrpcpb.IngestRequest{Path: filepath.Join(dir, "f1.sst"), StartKey: []byte("k"), EndKey: []byte("k10"), StartVersion: start, CommitVersion: commit})
	require.Empty(t, in.GetError())
	require.Equal(t, uint64(10), in.GetKvs())
	require.Eventually(t, func() bool {
		for _, n := range c.nodes {
			k := engineKeys(t, n.srv.Store().Engine(), "k", "k10")
			// 10 keys: 3 versions each before (old, new, ingested), k03 a 4th.
			if k[raft_cmdpb.CF_WRITE] != 31 {
				return false
			}
		}
		return true
	}, waitFor, time.Millisecond, "every replica applied the ingest")
	for i := range 10 {
		k := fmt.Sprintf("k%02d", i)
		if k == "k07" { // still locked by the prewrite above
			require.NotNil(t, c.get(k, commit).GetError().GetLocked())
			continue
		}
		require.Equal(t, want[k], string(c.get(k, commit).GetValue()), k)
	}
	again := c.ingest(&kvrpcpb.IngestRequest{Path: filepath.Join(dir, "f1.sst"), StartKey: []byte("k"), EndKey: []byte("k10"), StartVersion: start, CommitVersion: commit})
	require.Equal(t, uint64(10), again.GetKvs(), "ingesting again is harmless")
	missing := c.ingest(&kvrpcpb.IngestRequest{Path: filepath.Join(dir, "none.sst"), StartKey: []byte("k"), StartVersion: start, CommitVersion: commit})
	require.Contains(t, missing.GetError(), "none.sst")
}
