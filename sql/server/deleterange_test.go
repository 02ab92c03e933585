package server_test

import (
	"context"
	"encoding/hex"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/deleterange"
	"github.com/stratadb/strata/sql/tablecodec"
)

// TestDropsRecordDeleteRanges: the DDL jobs that make keys unreachable
// record their ranges (sql/deleterange) when they commit, once each: DROP
// TABLE, TRUNCATE TABLE (the old id), DROP INDEX, DROP DATABASE (each
// table) and an ADD INDEX rolled back by a duplicate; DROP TABLE IF EXISTS
// of a missing table, DROP VIEW and CREATE statements record nothing.
func TestDropsRecordDeleteRanges(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "")
	tableID := func(name string) int64 {
		for _, r := range queryStrings(t, db, "ADMIN SHOW DDL JOBS 100 WHERE JOB_TYPE = 'create table'") {
			if r[2] == name {
				id, err := strconv.ParseInt(r[6], 10, 64)
				require.NoError(t, err)
				return id
			}
		}
		require.Failf(t, "no create table job", "%s", name)
		return 0
	}
	for _, q := range []string{
		"CREATE TABLE d (id INT PRIMARY KEY)",
		"CREATE TABLE tr (id INT PRIMARY KEY)",
		"CREATE TABLE ix (id INT PRIMARY KEY, k INT, KEY k1 (k))",
		"INSERT INTO ix VALUES (1, 1), (2, 1)",
		"CREATE DATABASE dd",
		"CREATE TABLE dd.a (id INT)",
		"CREATE TABLE dd.b (id INT)",
		"CREATE VIEW v AS SELECT 1",
	} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	d, tr, ix, a, b := tableID("d"), tableID("tr"), tableID("ix"), tableID("a"), tableID("b")
	for _, q := range []string{
		"DROP TABLE d",
		"DROP TABLE IF EXISTS nothere",
		"TRUNCATE TABLE tr",
		"DROP INDEX k1 ON ix",
		"DROP DATABASE dd",
		"DROP VIEW v",
	} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	_, err := db.Exec("CREATE UNIQUE INDEX uk ON ix (k)")
	require.Equal(t, uint16(1062), mysqlCode(err), "%v", err)

	ctx := context.Background()
	now, err := ts.store.GetTS(ctx)
	require.NoError(t, err)
	pending, err := deleterange.Pending(ctx, ts.store, now, 0)
	require.NoError(t, err)
	var got []string
	for _, r := range pending {
		require.NotZero(t, r.TS)
		require.Less(t, r.TS, now)
		got = append(got, r.What)
		switch {
		case r.What == "index 1 of table "+strconv.FormatInt(ix, 10):
			start, end := tablecodec.IndexRange(ix, 1)
			require.Equal(t, start, r.StartKey)
			require.Equal(t, end, r.EndKey)
		case r.What == "table "+strconv.FormatInt(d, 10):
			start, end := tablecodec.TableRange(d)
			require.Equal(t, start, r.StartKey)
			require.Equal(t, end, r.EndKey)
		}
	}
	name := func(id int64) string { return "table " + strconv.FormatInt(id, 10) }
	require.Equal(t, []string{
		name(d), name(tr), "index 1 of table " + strconv.FormatInt(ix, 10), name(a), name(b),
		"index 2 of table " + strconv.FormatInt(ix, 10),
	}, got, "in job order")

	// Marking one done moves it; marking it again changes nothing.
	require.NoError(t, deleterange.MarkDone(ctx, ts.store, pending[0], 1))
	require.NoError(t, deleterange.MarkDone(ctx, ts.store, pending[0], 2))
	now, err = ts.store.GetTS(ctx)
	require.NoError(t, err)
	left, err := deleterange.Pending(ctx, ts.store, now, 0)
	require.NoError(t, err)
	require.Len(t, left, len(pending)-1)
	done, err := deleterange.Done(ctx, ts.store, now, 0)
	require.NoError(t, err)
	require.Len(t, done, 1)
	require.Equal(t, pending[0].What, done[0].What)
	require.EqualValues(t, 1, done[0].DoneMs)

	// information_schema shows them, pending first.
	rows := queryStrings(t, db, "SELECT OBJECT, STATE, START_KEY FROM information_schema.STRATA_GC_DELETE_RANGE")
	require.Len(t, rows, len(pending))
	require.Equal(t, []string{"table " + strconv.FormatInt(tr, 10), "pending"}, rows[0][:2])
	require.Equal(t, []string{name(d), "done", hex.EncodeToString(pending[0].StartKey)}, rows[len(rows)-1])
}
