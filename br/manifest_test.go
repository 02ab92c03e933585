package br

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv/backupfile"
)

func TestLocalDir(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"local:///tmp/b1", "/tmp/b1", true},
		{"local:///tmp/b1/", "/tmp/b1", true},
		{"local://tmp/b1", "", false},
		{"s3://bucket/b1", "", false},
		{"/tmp/b1", "", false},
	} {
		got, err := LocalDir(tc.in)
		if !tc.ok {
			require.ErrorIs(t, err, ErrStorage, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got)
	}
}

// TestManifestRoundTripAndCheck: a manifest written reads back equal; one
// whose table or total checksum is not the sum of its files' is refused.
func TestManifestRoundTripAndCheck(t *testing.T) {
	var f1, f2, f3 backupfile.Checksum
	f1.Add([]byte("t1_r1"), []byte("a"))
	f2.Add([]byte("t1_r2"), []byte("b"))
	f3.Add([]byte("t2_r1"), []byte("c"))
	t1 := f1
	t1.Merge(f2)
	total := t1
	total.Merge(f3)
	m := &Manifest{Format: manifestFormat, ClusterID: 7, BackupTS: 42, AllocIDBound: 100,
		Databases: []DatabaseMeta{{Name: "d", Info: json.RawMessage(`{"id":2,"name":"d"}`), Tables: []TableMeta{
			{Name: "a", ID: 1, Info: json.RawMessage(`{"id":1,"name":"a"}`), AutoInc: []byte{0, 1}, Checksum: t1},
			{Name: "b", ID: 3, Info: json.RawMessage(`{"id":3,"name":"b"}`), Checksum: f3},
		}}},
		Files: []FileMeta{
			{Name: "t1_0.sst", TableID: 1, StartKey: []byte("t1_r1"), EndKey: []byte("t1_r2"), Checksum: f1, Size: 10},
			{Name: "t1_1.sst", TableID: 1, StartKey: []byte("t1_r2"), EndKey: []byte("t1_r3"), Checksum: f2, Size: 10},
			{Name: "t2_0.sst", TableID: 3, StartKey: []byte("t2_r"), EndKey: []byte("t2_s"), Checksum: f3, Size: 10},
		},
		Total: total,
	}
	dir := t.TempDir()
	require.NoError(t, WriteManifest(dir, m))
	got, err := ReadManifest(dir)
	require.NoError(t, err)
	require.Equal(t, m.Files, got.Files)
	require.Equal(t, m.Total, got.Total)
	require.JSONEq(t, string(m.Databases[0].Tables[0].Info), string(got.Databases[0].Tables[0].Info))
	_, err = os.Stat(filepath.Join(dir, ManifestName+".tmp"))
	require.True(t, os.IsNotExist(err), "no temporary file left")

	bad := *m
	bad.Files = m.Files[:2] // table b lost its file
	require.NoError(t, WriteManifest(dir, &bad))
	_, err = ReadManifest(dir)
	require.ErrorContains(t, err, "table d.b checksum")

	_, err = ReadManifest(t.TempDir())
	require.ErrorContains(t, err, "not a finished backup")
}

func TestFilter(t *testing.T) {
	f := Filter{DB: "Bk", Table: "T1"}
	require.True(t, f.matchDB("bk"))
	require.False(t, f.matchDB("other"))
	require.True(t, f.matchTable("t1"))
	require.False(t, f.matchTable("t2"))
	require.True(t, Filter{}.matchDB("x") && Filter{}.matchTable("y"))
	require.True(t, systemDB("mysql"))
	require.False(t, systemDB("test"))
}

// TestFileCuts: a file larger than the piece size is cut about every
// piece size of pairs, at increasing keys inside it; a small one is not.
func TestFileCuts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.sst")
	w, err := backupfile.Create(context.Background(), path, nil)
	require.NoError(t, err)
	for i := range 1000 {
		require.NoError(t, w.Add(fmt.Appendf(nil, "k%04d", i), make([]byte, 95))) // 100 bytes a pair
	}
	sum := w.Checksum()
	_, err = w.Finish()
	require.NoError(t, err)
	f := FileMeta{Name: "f.sst", StartKey: []byte("k"), EndKey: []byte("l"), Checksum: sum}
	cuts, err := fileCuts(path, f, 10_000)
	require.NoError(t, err)
	require.Len(t, cuts, 9)
	for i, c := range cuts {
		require.Equal(t, fmt.Sprintf("k%04d", (i+1)*100), string(c))
	}
	cuts, err = fileCuts(path, f, 200_000)
	require.NoError(t, err)
	require.Empty(t, cuts)
}
