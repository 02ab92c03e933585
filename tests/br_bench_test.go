package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stratadb/strata/br"
)

// BenchmarkBackupRestore measures br's backup and restore rates (MB/s of
// key+value bytes, rows and index entries) on a table of 200k rows with a
// secondary index, between two 3-store clusters on this machine:
//
//	go test -run '^$' -bench BackupRestore -benchtime 1x -timeout 30m ./tests/
func BenchmarkBackupRestore(b *testing.B) {
	const rows = 200_000
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
		defer cancel()
		src := startCluster(b, clusterOpts{})
		db := openDB(b, src, 0, "")
		mustExec(b, db, "CREATE DATABASE bench")
		mustExec(b, db, "CREATE TABLE bench.t (id INT PRIMARY KEY, k INT, c CHAR(120), pad CHAR(60), KEY k (k))")
		load := time.Now()
		pad := strings.Repeat("p", 60)
		for i := 0; i < rows; i += 1000 {
			var sb strings.Builder
			sb.WriteString("INSERT INTO bench.t VALUES ")
			for j := i; j < i+1000; j++ {
				if j > i {
					sb.WriteByte(',')
				}
				fmt.Fprintf(&sb, "(%d, %d, '%0120d', '%s')", j, (j*7919)%rows, j, pad)
			}
			mustExec(b, db, sb.String())
		}
		b.Logf("loaded %d rows in %v", rows, time.Since(load))
		dir := b.TempDir()
		b.ResetTimer()
		start := time.Now()
		m, err := br.Backup(ctx, br.Config{PD: src.PDAddrs(), Storage: "local://" + dir, Filter: br.Filter{DB: "bench"}})
		if err != nil {
			b.Fatal(err)
		}
		backupSecs := time.Since(start).Seconds()
		b.StopTimer()
		src.Kill()
		dst := startCluster(b, clusterOpts{})
		b.StartTimer()
		start = time.Now()
		res, err := br.Restore(ctx, br.Config{PD: dst.PDAddrs(), Storage: "local://" + dir})
		if err != nil {
			b.Fatal(err)
		}
		restoreSecs := time.Since(start).Seconds()
		mb := float64(m.Total.Bytes) / 1e6
		b.ReportMetric(mb, "MB")
		b.ReportMetric(float64(m.Total.KVs), "kvs")
		b.ReportMetric(mb/backupSecs, "backup_MB/s")
		b.ReportMetric(mb/restoreSecs, "restore_MB/s")
		b.Logf("backup: %d files, %d kvs, %.1f MB in %.2fs (%.1f MB/s); restore (incl. verify): %d kvs in %.2fs (%.1f MB/s)",
			len(m.Files), m.Total.KVs, mb, backupSecs, mb/backupSecs, res.Total.KVs, restoreSecs, mb/restoreSecs)
	}
}
