package tests

import (
	"database/sql"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stratadb/strata/localcluster"
	"github.com/stretchr/testify/require"
)

// The applications' round trips (make test-apps installs what they
// need; without it they skip): Django's migrations and ORM through
// mysqlclient, and a mysqldump of one cluster reloaded into another.

// TestDjango runs tests/clients/django/run.py (Debian's python3-django
// 3.2 with python3-mysqldb): migrate of the contrib apps and of the shop
// app (a ForeignKey, a unique utf8mb4_general_ci email, a JSONField), a
// second migration with AddField / AlterField / RenameField on the
// populated tables and back, then the app's queries. The script asserts
// each step and prints "OK django".
func TestDjango(t *testing.T) {
	py := "/usr/bin/python3"
	if exec.Command(py, "-c", "import django, MySQLdb").Run() != nil {
		t.Skipf("%s: no django or MySQLdb (make test-apps installs python3-django and python3-mysqldb)", py)
	}
	c := startCluster(t, clusterOpts{stores: 1})
	host, port, err := net.SplitHostPort(c.SQLAddrs[0])
	require.NoError(t, err)
	cmd := exec.Command(py, "clients/django/run.py", host, port)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "OK django\n", string(out))
}

// TestMysqldumpRoundTrip loads tests/clients/mysqldump/source.sql into
// one cluster, dumps the database with mysqldump (Debian's mariadb-client:
// LOCK TABLES, ALTER TABLE ... DISABLE KEYS, information_schema.FILES /
// PARTITIONS / TRIGGERS, views as temporary stand-ins), loads the dump into
// a second cluster with the mysql client, and requires CHECKSUM TABLE and
// SHOW CREATE TABLE / VIEW to agree for every table, then a second dump
// (--single-transaction --routines --events --triggers) of each cluster to
// be the same text.
func TestMysqldumpRoundTrip(t *testing.T) {
	mysqlBin, err1 := exec.LookPath("mysql")
	dumpBin, err2 := exec.LookPath("mysqldump")
	if err1 != nil || err2 != nil {
		t.Skip("mysql / mysqldump not installed (make test-apps installs mariadb-client)")
	}
	src := startCluster(t, clusterOpts{stores: 1})
	dst := startCluster(t, clusterOpts{stores: 1})
	run := func(stdin, bin string, addr string, args ...string) string {
		t.Helper()
		host, port, err := net.SplitHostPort(addr)
		require.NoError(t, err)
		cmd := exec.Command(bin, append([]string{"-h", host, "-P", port, "-u", "root"}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, "%s %v: %s", bin, args, stderr.String())
		require.Empty(t, stderr.String(), "%s %v", bin, args)
		return string(out)
	}
	source, err := os.ReadFile("clients/mysqldump/source.sql")
	require.NoError(t, err)
	run(string(source), mysqlBin, src.SQLAddrs[0])

	dump := run("", dumpBin, src.SQLAddrs[0], "--skip-dump-date", "--databases", "dumpdb")
	for _, want := range []string{"LOCK TABLES `orders` WRITE;", "/*!40000 ALTER TABLE `orders` DISABLE KEYS */;",
		"CONSTRAINT `fk_customer` FOREIGN KEY (`customer_id`) REFERENCES `customers` (`id`) ON DELETE CASCADE ON UPDATE RESTRICT",
		"`name` varchar(100) COLLATE utf8mb4_unicode_ci NOT NULL DEFAULT 'anon'", "`attrs` json DEFAULT NULL",
		"`updated` timestamp(3) NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3)", "`active` tinyint(1) NOT NULL DEFAULT '1'", "`note` text,",
		"VIEW `big_orders` AS SELECT", "PRIMARY KEY (`id`) /*T![clustered_index] NONCLUSTERED */",
		"(1,'0000-00-00','0000-00-00 00:00:00'),\n(2,'2020-00-15','2020-01-00 10:00:00')",
		"`d` date NOT NULL DEFAULT '0000-00-00'",
		// TIMESTAMPs as UTC under the dump's SET TIME_ZONE='+00:00'.
		"SET TIME_ZONE='+00:00'", "`at` timestamp(3) NOT NULL DEFAULT '2024-01-01 00:00:00.000'",
		"(1,'2024-01-01 00:00:00.500','2024-01-01 05:30:00'),\n(2,'2024-07-01 06:30:00.000','2024-07-01 12:00:00')"} {
		require.Contains(t, dump, want)
	}
	// MariaDB's mysqldump lists generated columns' values in its INSERTs
	// (MariaDB ignores them with a warning); the values are the computed
	// ones, which Strata accepts (any other value is 3105, as MySQL).
	for _, want := range []string{"`total` decimal(12,2) GENERATED ALWAYS AS ((`qty` * `price`)) STORED NOT NULL,",
		"`label` varchar(40) GENERATED ALWAYS AS (concat(`qty`, _utf8mb4' x ', `price`)) VIRTUAL,",
		"(1,2,9.99,19.98,'2 x 9.99')",
		"CONSTRAINT `qty_positive` CHECK ((`qty` > 0))", "CONSTRAINT `line_items_chk_1` CHECK ((`price` < 1000)) /*!80016 NOT ENFORCED */",
		"NO_AUTO_VALUE_ON_ZERO", "KEY `idx_v` (`v`(3))", "UNIQUE KEY `uk_body` (`body`(8))", "(0,'zero','the zero row')"} {
		require.Contains(t, dump, want)
	}
	// --comments (here and below): the mysql client strips every comment
	// but /*! */ and /*M! */ by default, and with it SHOW CREATE TABLE's
	// /*T![clustered_index] NONCLUSTERED */ (the reload would then follow
	// tidb_enable_clustered_index, clustering an integer key).
	run(dump, mysqlBin, dst.SQLAddrs[0], "--comments")

	dbs := map[string]*sql.DB{"source": openDB(t, src, 0, "dumpdb"), "reloaded": openDB(t, dst, 0, "dumpdb")}
	describe := func(db *sql.DB) (tables []string, checksums, creates map[string]string) {
		rows, err := db.Query("SHOW FULL TABLES")
		require.NoError(t, err)
		kinds := map[string]string{}
		for rows.Next() {
			var name, kind string
			require.NoError(t, rows.Scan(&name, &kind))
			tables, kinds[name] = append(tables, name), kind
		}
		require.NoError(t, rows.Err())
		checksums, creates = map[string]string{}, map[string]string{}
		for _, name := range tables {
			var tbl string
			var sum sql.NullString
			require.NoError(t, db.QueryRow("CHECKSUM TABLE `"+name+"`").Scan(&tbl, &sum))
			require.Equal(t, "dumpdb."+name, tbl)
			checksums[name] = sum.String
			require.Equal(t, kinds[name] == "BASE TABLE", sum.Valid, "a table has a checksum, a view NULL: %s", name)
			if kinds[name] == "VIEW" {
				var v, create, cs, coll string
				require.NoError(t, db.QueryRow("SHOW CREATE VIEW `"+name+"`").Scan(&v, &create, &cs, &coll))
				creates[name] = create
				continue
			}
			var n, create string
			require.NoError(t, db.QueryRow("SHOW CREATE TABLE `"+name+"`").Scan(&n, &create))
			creates[name] = create
		}
		return tables, checksums, creates
	}
	tables, sums, creates := describe(dbs["source"])
	require.ElementsMatch(t, []string{"customers", "orders", "order_tags", "empty_t", "flags", "big_orders", "line_items", "seq0", "sessions", "legacy", "order_totals", "events"}, tables)
	for _, name := range []string{"customers", "orders", "order_tags", "flags", "seq0", "sessions", "legacy", "order_totals", "events"} {
		require.NotEqual(t, "0", sums[name], "%s has rows", name)
	}
	require.Equal(t, "0", sums["empty_t"])
	tables2, sums2, creates2 := describe(dbs["reloaded"])
	require.Equal(t, tables, tables2)
	require.Equal(t, sums, sums2, "CHECKSUM TABLE after the reload")
	require.Equal(t, creates, creates2, "SHOW CREATE TABLE after the reload")

	// A session in another zone sees the same instants in both clusters
	// (and finds them through the index on the column).
	for _, c := range []*localcluster.Cluster{src, dst} {
		db, err := sql.Open("mysql", c.DSN(0, "dumpdb")+"&time_zone=%27-08%3A00%27")
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		require.Equal(t, [][]string{{"1", "2023-12-31 16:00:00.500", "2024-01-01 05:30:00"}, {"2", "2024-06-30 22:30:00.000", "2024-07-01 12:00:00"}, {"3", "2023-12-31 16:00:00.000", "NULL"}},
			queryRows(t, db, "SELECT id, at, wall FROM events ORDER BY id"))
		require.Equal(t, [][]string{{"2"}}, queryRows(t, db, "SELECT id FROM events FORCE INDEX (idx_at) WHERE at = '2024-06-30 22:30:00'"))
	}

	// The reloaded generated columns are computed, and indexed.
	var ids string
	require.NoError(t, dbs["reloaded"].QueryRow("SELECT GROUP_CONCAT(id ORDER BY id) FROM line_items WHERE label = '10 x 0.50' OR total = 100").Scan(&ids))
	require.Equal(t, "2,3", ids)
	_, err = dbs["reloaded"].Exec("UPDATE line_items SET qty = qty + 1")
	require.NoError(t, err)
	// The reloaded CHECK constraints are enforced as they were.
	_, err = dbs["reloaded"].Exec("UPDATE line_items SET qty = 0 WHERE id = 1")
	require.ErrorContains(t, err, "Check constraint 'qty_positive' is violated.")
	_, err = dbs["reloaded"].Exec("INSERT INTO line_items (id, qty, price) VALUES (4, 1, 5000)")
	require.NoError(t, err)
	_, err = dbs["reloaded"].Exec("DELETE FROM line_items WHERE id = 4")
	require.NoError(t, err)
	_, err = dbs["reloaded"].Exec("ADMIN CHECK TABLE line_items")
	require.NoError(t, err)
	require.NoError(t, dbs["reloaded"].QueryRow("SELECT GROUP_CONCAT(total ORDER BY id) FROM line_items FORCE INDEX (idx_total) WHERE total > 0").Scan(&ids))
	require.Equal(t, "29.97,5.50,200.00", ids)

	// The reloaded foreign keys act: deleting a customer cascades to its
	// orders and their tags.
	r := dbs["reloaded"]
	_, err = r.Exec("DELETE FROM customers WHERE email = 'ANN@x.com'") // utf8mb4_general_ci
	require.NoError(t, err)
	var orders, tags int
	require.NoError(t, r.QueryRow("SELECT (SELECT COUNT(*) FROM orders), (SELECT COUNT(*) FROM order_tags)").Scan(&orders, &tags))
	require.Equal(t, []int{1, 1}, []int{orders, tags})

	// A consistent-snapshot dump (SAVEPOINT, SHOW EVENTS / TRIGGERS /
	// PROCEDURE STATUS) of the source equals the reloaded one's before
	// the delete.
	opts := []string{"--skip-dump-date", "--single-transaction", "--routines", "--events", "--triggers", "--databases", "dumpdb"}
	again := run("", dumpBin, src.SQLAddrs[0], opts...)
	require.Contains(t, again, "INSERT INTO `order_tags` VALUES")
	run(again, mysqlBin, dst.SQLAddrs[0], "--comments")
	require.Equal(t, again, run("", dumpBin, dst.SQLAddrs[0], opts...))
}
