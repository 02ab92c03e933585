package server_test

import (
	"database/sql"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stratadb/strata/sql/autoid"
	"github.com/stratadb/strata/sql/server"
	"github.com/stretchr/testify/require"
)

// TestTypeScripts runs testdata/types: MySQL type semantics end to end
// (DECIMAL storage, arithmetic, comparison, aggregates and text output).
func TestTypeScripts(t *testing.T) { runScripts(t, "testdata/types") }

// TestTemporalAndBitBinaryProtocol checks TIME, BIT, YEAR, ENUM and SET
// through go-sql-driver in both protocols: the binary encodings (TIME as
// sign/days/h/m/s/µs, BIT as bytes), and the column metadata the driver
// derives database type names and scan types from.
func TestTemporalAndBitBinaryProtocol(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "parseTime=true")
	_, err := db.Exec("CREATE TABLE tb (id INT PRIMARY KEY, t TIME(6), b BIT(12), y YEAR NOT NULL, e ENUM('x','y'), s SET('p','q'))")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO tb VALUES (1, '-838:59:58.999999', b'101000001', 1999, 'y', 'q,p'), (2, '00:00:00', 0, 2000, NULL, ''), (3, '26:03:04', 4095, 2155, 'x', 'q')")
	require.NoError(t, err)
	want := [][]string{
		{"1", "-838:59:58.999999", "\x01\x41", "1999", "y", "p,q"},
		{"2", "00:00:00.000000", "\x00\x00", "2000", "NULL", ""},
		{"3", "26:03:04.000000", "\x0f\xff", "2155", "x", "q"},
	}
	require.Equal(t, want, queryStrings(t, db, "SELECT * FROM tb ORDER BY id"))
	stmt, err := db.Prepare("SELECT * FROM tb WHERE id >= ? ORDER BY id")
	require.NoError(t, err)
	defer stmt.Close()
	rows, err := stmt.Query(1)
	require.NoError(t, err)
	cts, err := rows.ColumnTypes()
	require.NoError(t, err)
	var names []string
	for _, ct := range cts {
		names = append(names, ct.DatabaseTypeName())
	}
	require.Equal(t, []string{"INT", "TIME", "BIT", "YEAR", "ENUM", "SET"}, names)
	var got [][]string
	for rows.Next() {
		var id, y int
		var tm, b, e, s sql.NullString
		require.NoError(t, rows.Scan(&id, &tm, &b, &y, &e, &s))
		got = append(got, []string{strconv.Itoa(id), tm.String, b.String, strconv.Itoa(y), map[bool]string{true: e.String, false: "NULL"}[e.Valid], s.String})
	}
	require.NoError(t, rows.Err())
	require.Equal(t, want, got)

	// TIME parameters and results in the binary protocol, as the driver's
	// own TestDateTime sends them; zero dates (read without parseTime):
	// the zero date is length 0, zero months and days are sent as they
	// are (the driver prints them back).
	plain := ts.open(t, "test", "")
	for _, c := range []struct {
		h            *sql.DB
		typ, in, out string
	}{
		{db, "TIME", "-12:34:56", "-12:34:56"},
		{db, "TIME(1)", "838:59:58.9", "838:59:58.9"},
		{db, "TIME(6)", "-838:59:58.999999", "-838:59:58.999999"},
		{db, "TIME", "0001-01-01 03:25:45", "03:25:45"},
		{db, "TIME", "0000-00-00", "00:00:00"},
		{plain, "DATE", "0000-00-00", "0000-00-00"},
		{plain, "DATETIME", "0000-00-00 00:00:00", "0000-00-00 00:00:00"},
		{plain, "DATETIME(2)", "2020-00-15 01:02:03.5", "2020-00-15 01:02:03.50"},
		{plain, "DATE", "2020-01-00", "2020-01-00"},
	} {
		var s string
		require.NoError(t, c.h.QueryRow("SELECT CAST(? AS "+c.typ+")", c.in).Scan(&s), c.typ)
		require.Equal(t, c.out, s, c.typ)
	}
	// DECIMAL(M,D) is M digits wide (the driver takes the point and the
	// sign off the column length).
	rows, err = db.Query("SELECT CAST(1 AS DECIMAL(10,6)), CAST(1 AS DECIMAL(5,0))")
	require.NoError(t, err)
	cts, err = rows.ColumnTypes()
	require.NoError(t, err)
	for i, want := range [][2]int64{{10, 6}, {5, 0}} {
		p, s, ok := cts[i].DecimalSize()
		require.True(t, ok)
		require.Equal(t, want, [2]int64{p, s})
	}
	require.NoError(t, rows.Close())

	// Every BLOB/TEXT size goes out as BLOB (the length tells them apart).
	_, err = db.Exec("CREATE TABLE tx (a TINYTEXT, b MEDIUMBLOB, c LONGTEXT)")
	require.NoError(t, err)
	rows, err = db.Query("SELECT * FROM tx")
	require.NoError(t, err)
	cts, err = rows.ColumnTypes()
	require.NoError(t, err)
	names = names[:0]
	for _, ct := range cts {
		names = append(names, ct.DatabaseTypeName())
	}
	require.NoError(t, rows.Close())
	require.Equal(t, []string{"TEXT", "BLOB", "TEXT"}, names)

	var d time.Time
	require.NoError(t, db.QueryRow("SELECT CAST(? AS DATETIME(6))", "2011-11-20 21:27:37.123456").Scan(&d))
	require.Equal(t, time.Date(2011, 11, 20, 21, 27, 37, 123456000, time.UTC), d)
}

// TestAutoIncrementAcrossNodes: two SQL nodes on one store draw
// AUTO_INCREMENT values from one per-table bound, in ranges of
// autoid.AutoIncStep, so concurrent inserts through both never collide,
// and an explicit value moves the counter of the node that wrote it (the
// other node finishes the range it holds first, as TiDB's do).
func TestAutoIncrementAcrossNodes(t *testing.T) {
	a, _ := startServerWith(t, func(*server.Config) {})
	b, _ := startServerWith(t, func(c *server.Config) { c.Store = a.store.newNode(t) })
	da, db := a.open(t, "test", ""), b.open(t, "test", "")
	_, err := da.Exec("CREATE TABLE ai (id BIGINT PRIMARY KEY AUTO_INCREMENT, node CHAR(1))")
	require.NoError(t, err)
	first := func(d *sql.DB, node string) int64 {
		res, err := d.Exec("INSERT INTO ai (node) VALUES (?)", node)
		require.NoError(t, err)
		id, err := res.LastInsertId()
		require.NoError(t, err)
		return id
	}
	require.Equal(t, int64(1), first(da, "a"))
	require.Equal(t, int64(autoid.AutoIncStep+1), first(db, "b"))
	require.Equal(t, int64(2), first(da, "a"))

	var wg sync.WaitGroup
	for _, d := range []*sql.DB{da, db} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if _, err := d.Exec("INSERT INTO ai (node) VALUES ('x')"); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	require.Equal(t, [][]string{{"103", "103"}}, queryStrings(t, da, "SELECT COUNT(*), COUNT(DISTINCT id) FROM ai"))

	// An explicit value beyond both nodes' ranges: node a continues above
	// it, node b within its range.
	_, err = da.Exec("INSERT INTO ai VALUES (5000, 'a')")
	require.NoError(t, err)
	require.Greater(t, first(db, "b"), int64(autoid.AutoIncStep+51))
	require.Greater(t, first(da, "a"), int64(5000))
}
