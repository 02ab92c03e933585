package tests

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

// The AFFINITY table option against real binaries: CREATE / ALTER /
// TRUNCATE / DROP TABLE keep PD's affinity groups in step with the
// catalog before the statement returns, SHOW AFFINITY shows the group PD
// schedules until it is stable, and a new DDL owner removes the groups of
// tables that no longer exist.
func TestAffinityTableOption(t *testing.T) {
	c := startPDCluster(t, 3, nil)
	require.NoError(t, c.Start())
	waitReady(t, c)
	waitStoresUp(t, c, len(c.Stores))
	db := openDB(t, c, 0, "")
	mustExec(t, db, "CREATE DATABASE d")
	db = openDB(t, c, 0, "d")

	configured := func() []int64 {
		t.Helper()
		var gs []apiAffinityGroup
		require.NoError(t, pdAPI(t, c, "GET", "affinity-groups", nil, &gs))
		var ids []int64
		for _, g := range gs {
			ids = append(ids, g.TableID)
		}
		return ids
	}
	idOf := func(table string) int64 {
		t.Helper()
		var id int64
		require.NoError(t, db.QueryRow("SELECT TIDB_TABLE_ID FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'd' AND TABLE_NAME = ?", table).Scan(&id))
		return id
	}
	errCode := func(err error) uint16 {
		var me *mysql.MySQLError
		require.ErrorAs(t, err, &me)
		return me.Number
	}

	for _, bad := range []string{"'partition'", "'bogus'"} {
		_, err := db.Exec("CREATE TABLE x (a INT) AFFINITY = " + bad)
		require.Equal(t, uint16(8266), errCode(err), "AFFINITY = %s: %v", bad, err)
	}

	mustExec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, k INT, INDEX ik (k)) AFFINITY = 'table'")
	mustExec(t, db, "CREATE TABLE plain (id INT PRIMARY KEY)")
	tid := idOf("t")
	require.Contains(t, configured(), tid, "the group exists once CREATE TABLE returned")
	require.NotContains(t, configured(), idOf("plain"))
	create := queryRows(t, db, "SHOW CREATE TABLE t")[0][1]
	require.Contains(t, create, "/*T![affinity] AFFINITY='table' */")
	mustExec(t, db, "SPLIT TABLE t BETWEEN (0) AND (100000) REGIONS 3")
	mustExec(t, db, "SPLIT TABLE t INDEX ik BETWEEN (0) AND (100000) REGIONS 3")

	// PD moves every region of the group onto one leader store.
	var row []string
	require.Eventually(t, func() bool {
		rows := queryRows(t, db, "SHOW AFFINITY")
		if len(rows) != 1 {
			return false
		}
		row = rows[0]
		return row[5] == "Stable" && row[6] == row[7] && row[6] != "0"
	}, 2*time.Minute, 200*time.Millisecond, "SHOW AFFINITY: %v", row)
	require.Equal(t, []string{"d", "t", "NULL"}, row[:3])
	require.NotEqual(t, "NULL", row[3], "a target leader store")
	g := waitAffinityStable(t, c, tid, time.Minute)
	require.Equal(t, fmt.Sprint(g.LeaderStoreID), row[3])
	require.Len(t, queryRows(t, db, "SHOW AFFINITY LIKE 't'"), 1)
	require.Empty(t, queryRows(t, db, "SHOW AFFINITY LIKE 'x%'"))
	require.Len(t, queryRows(t, db, "SHOW AFFINITY WHERE Status = 'Stable'"), 1)

	// TRUNCATE gives the table a new id: the group follows it.
	mustExec(t, db, "TRUNCATE TABLE t")
	newID := idOf("t")
	require.NotEqual(t, tid, newID)
	ids := configured()
	require.Contains(t, ids, newID)
	require.NotContains(t, ids, tid)

	// ALTER TABLE ... AFFINITY = 'none' removes the group; 'table' (with
	// another option in the same clause) adds it back.
	mustExec(t, db, "ALTER TABLE t AFFINITY = 'none'")
	require.NotContains(t, configured(), newID)
	require.Empty(t, queryRows(t, db, "SHOW AFFINITY"))
	require.NotContains(t, queryRows(t, db, "SHOW CREATE TABLE t")[0][1], "AFFINITY")
	mustExec(t, db, "ALTER TABLE t AFFINITY = 'table', COMMENT = 'co-located'")
	require.Contains(t, configured(), newID)
	create = queryRows(t, db, "SHOW CREATE TABLE t")[0][1]
	require.Contains(t, create, "COMMENT='co-located' /*T![affinity] AFFINITY='table' */")
	_, err := db.Exec("ALTER TABLE t AFFINITY = 'partition'")
	require.Equal(t, uint16(8266), errCode(err))

	// DROP TABLE removes the group.
	mustExec(t, db, "DROP TABLE t")
	require.NotContains(t, configured(), newID)

	// A group of a table that does not exist (added through PD's API, or
	// left by a crash between a DROP and its PD call) is removed by the
	// next DDL owner; a group of an existing table added through the API
	// stays.
	const gone = 999999
	plainID := idOf("plain")
	require.NoError(t, pdAPI(t, c, "POST", "affinity-groups", map[string]any{"table_ids": []int64{gone, plainID}}, nil))
	require.NoError(t, c.SQL[0].Stop(10*time.Second))
	require.NoError(t, c.SQL[0].Start())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, c.WaitReady(ctx, 0))
	require.Eventually(t, func() bool { return !slices.Contains(configured(), gone) }, time.Minute, 100*time.Millisecond,
		"the new owner reconciles: %v", configured())
	require.Contains(t, configured(), plainID)
}
