package server_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestModifyColumnUnderWriters: MODIFY COLUMN INT -> VARCHAR on an
// indexed column rewrites every row while writers insert and update rows
// of their own; every write is either acknowledged or fails with a
// retryable error, the table passes ADMIN CHECK, and every acknowledged
// write is there with the converted value, read from the rows and through
// the rebuilt index.
func TestModifyColumnUnderWriters(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "")
	exec := func(q string) {
		t.Helper()
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	exec("CREATE TABLE mw (id INT PRIMARY KEY, v INT, KEY kv (v))")
	const rows = 1500 // several backfill batches
	for lo := 0; lo < rows; lo += 500 {
		var vals []string
		for id := lo; id < lo+500; id++ {
			vals = append(vals, fmt.Sprintf("(%d, %d)", id, id))
		}
		exec("INSERT INTO mw VALUES " + strings.Join(vals, ","))
	}

	const writers = 3
	// Retryable: the schema changed under the statement (8028), a write
	// conflict (9007), a deadlock (1213) or a lock wait timeout (1205).
	retryable := map[uint16]bool{8028: true, 9007: true, 1213: true, 1205: true}
	var (
		wg       sync.WaitGroup
		stop     = make(chan struct{})
		started  = make(chan struct{}, writers)
		writes   atomic.Int64 // acknowledged writes
		failures = make(chan error, writers)
		progress = make(chan struct{}, 1)       // a write was acknowledged
		want     = make([]map[int]int, writers) // per writer: id -> value acknowledged last
	)
	for w := range writers {
		want[w] = map[int]int{}
		for id := w; id < rows; id += writers {
			want[w][id] = id
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := db.Conn(context.Background())
			if err != nil {
				failures <- err
				return
			}
			defer conn.Close()
			next := 100000 * (w + 1)
			for i := 0; ; i++ {
				if i == 1 {
					started <- struct{}{}
				}
				select {
				case <-stop:
					return
				default:
				}
				var q string
				var id, val int
				if i%2 == 0 {
					id, val = next, next%997
					q = fmt.Sprintf("INSERT INTO mw VALUES (%d, %d)", id, val)
				} else {
					id = w + writers*((i*31)%(rows/writers))
					val = want[w][id] + 7
					q = fmt.Sprintf("UPDATE mw SET v = v + 7 WHERE id = %d", id)
				}
				_, err := conn.ExecContext(context.Background(), q)
				if err != nil {
					if !retryable[mysqlCode(err)] {
						failures <- fmt.Errorf("%s: %w", q, err)
						return
					}
					continue
				}
				if i%2 == 0 {
					next++
				}
				want[w][id] = val
				writes.Add(1)
				select {
				case progress <- struct{}{}:
				default:
				}
			}
		}()
	}
	for range writers {
		<-started
	}
	before := writes.Load()
	_, alterErr := db.Exec("ALTER TABLE mw MODIFY v VARCHAR(20)")
	during := writes.Load() - before
	// A few more writes under the new schema.
	for after := writes.Load(); writes.Load() < after+3*writers; {
		select {
		case err := <-failures:
			t.Fatal(err)
		case <-progress:
		}
	}
	close(stop)
	wg.Wait()
	close(failures)
	for err := range failures {
		require.NoError(t, err)
	}
	require.NoError(t, alterErr)
	require.Greater(t, during, int64(0), "writes were acknowledged while the ALTER ran")
	t.Logf("%d writes acknowledged while the ALTER ran, %d in all", during, writes.Load())

	exec("ADMIN CHECK TABLE mw")
	got := map[int]string{}
	for _, r := range queryStrings(t, db, "SELECT id, v FROM mw") {
		id, err := strconv.Atoi(r[0])
		require.NoError(t, err)
		got[id] = r[1]
	}
	n := 0
	for w := range writers {
		for id, v := range want[w] {
			require.Equal(t, strconv.Itoa(v), got[id], "row %d", id)
			n++
		}
	}
	require.Len(t, got, n, "no row other than the acknowledged ones")
	require.Equal(t, [][]string{{"varchar(20)"}}, queryStrings(t, db,
		"SELECT COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_NAME = 'mw' AND COLUMN_NAME = 'v'"))
	// Through the rebuilt index: the string order, and every value.
	for w := range writers {
		for id, v := range want[w] {
			if id%50 != 0 {
				continue
			}
			ids := queryStrings(t, db, fmt.Sprintf("SELECT id FROM mw FORCE INDEX (kv) WHERE v = '%d' ORDER BY id", v))
			require.Contains(t, ids, []string{strconv.Itoa(id)}, "value %d of row %d through the index", v, id)
		}
	}
}
