package server_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tuples is n parenthesised groups of w markers: go-tpc's row IN lists.
func tuples(n, w int) string {
	g := "(" + strings.TrimSuffix(strings.Repeat("?,", w), ",") + ")"
	return strings.TrimSuffix(strings.Repeat(g+",", n), ",")
}

// markers is n markers separated by commas.
func markers(n int) string { return strings.TrimSuffix(strings.Repeat("?,", n), ",") }

// workloadArgs repeats the argument group g n times.
func workloadArgs(n int, g ...any) []any {
	var out []any
	for range n {
		out = append(out, g...)
	}
	return out
}

// TestPlanCacheWorkloads: every statement sysbench (oltp_read_write,
// oltp_update_index, oltp_update_non_index, oltp_delete,
// select_random_points, select_random_ranges) and go-tpc's TPC-C send as
// prepared statements (../shared/suites/captures: sb_*, tpcc_run), on
// their own schemas, is served from the plan cache from its second
// execution on: no prepared SELECT, UPDATE or DELETE of theirs is planned
// at every execution. INSERT, BEGIN and COMMIT plan nothing.
func TestPlanCacheWorkloads(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "")
	db.SetMaxOpenConns(1)
	mustExecAll(t, db,
		"CREATE TABLE sbtest1 (id INT NOT NULL AUTO_INCREMENT, k INT NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', PRIMARY KEY (id), KEY k_1 (k))",
		"CREATE TABLE warehouse (w_id INT NOT NULL, w_name VARCHAR(10), w_street_1 VARCHAR(20), w_street_2 VARCHAR(20), w_city VARCHAR(20), w_state CHAR(2), w_zip CHAR(9), w_tax DECIMAL(4, 4), w_ytd DECIMAL(12, 2), PRIMARY KEY (w_id))",
		"CREATE TABLE district (d_id INT NOT NULL, d_w_id INT NOT NULL, d_name VARCHAR(10), d_street_1 VARCHAR(20), d_street_2 VARCHAR(20), d_city VARCHAR(20), d_state CHAR(2), d_zip CHAR(9), d_tax DECIMAL(4, 4), d_ytd DECIMAL(12, 2), d_next_o_id INT, PRIMARY KEY (d_w_id, d_id))",
		"CREATE TABLE customer (c_id INT NOT NULL, c_d_id INT NOT NULL, c_w_id INT NOT NULL, c_first VARCHAR(16), c_middle CHAR(2), c_last VARCHAR(16), c_street_1 VARCHAR(20), c_street_2 VARCHAR(20), c_city VARCHAR(20), c_state CHAR(2), c_zip CHAR(9), c_phone CHAR(16), c_since DATETIME, c_credit CHAR(2), c_credit_lim DECIMAL(12, 2), c_discount DECIMAL(4,4), c_balance DECIMAL(12,2), c_ytd_payment DECIMAL(12,2), c_payment_cnt INT, c_delivery_cnt INT, c_data VARCHAR(500), PRIMARY KEY(c_w_id, c_d_id, c_id), INDEX idx_customer (c_w_id, c_d_id, c_last, c_first))",
		"CREATE TABLE new_order (no_o_id INT NOT NULL, no_d_id INT NOT NULL, no_w_id INT NOT NULL, PRIMARY KEY(no_w_id, no_d_id, no_o_id))",
		"CREATE TABLE orders (o_id INT NOT NULL, o_d_id INT NOT NULL, o_w_id INT NOT NULL, o_c_id INT, o_entry_d DATETIME, o_carrier_id INT, o_ol_cnt INT, o_all_local INT, PRIMARY KEY(o_w_id, o_d_id, o_id), INDEX idx_order (o_w_id, o_d_id, o_c_id, o_id))",
		"CREATE TABLE order_line (ol_o_id INT NOT NULL, ol_d_id INT NOT NULL, ol_w_id INT NOT NULL, ol_number INT NOT NULL, ol_i_id INT NOT NULL, ol_supply_w_id INT, ol_delivery_d DATETIME, ol_quantity INT, ol_amount DECIMAL(6, 2), ol_dist_info CHAR(24), PRIMARY KEY(ol_w_id, ol_d_id, ol_o_id, ol_number))",
		"CREATE TABLE stock (s_i_id INT NOT NULL, s_w_id INT NOT NULL, s_quantity INT, s_dist_01 CHAR(24), s_dist_02 CHAR(24), s_dist_03 CHAR(24), s_dist_04 CHAR(24), s_dist_05 CHAR(24), s_dist_06 CHAR(24), s_dist_07 CHAR(24), s_dist_08 CHAR(24), s_dist_09 CHAR(24), s_dist_10 CHAR(24), s_ytd INT, s_order_cnt INT, s_remote_cnt INT, s_data VARCHAR(50), PRIMARY KEY(s_w_id, s_i_id))",
		"CREATE TABLE item (i_id INT NOT NULL, i_im_id INT, i_name VARCHAR(24), i_price DECIMAL(5, 2), i_data VARCHAR(50), PRIMARY KEY(i_id))",
		"INSERT INTO warehouse (w_id, w_ytd) VALUES (1, 0)",
		"INSERT INTO district (d_id, d_w_id, d_ytd, d_next_o_id) VALUES (1, 1, 0, 3001), (2, 1, 0, 3001)",
		"INSERT INTO customer (c_id, c_d_id, c_w_id, c_first, c_last, c_balance, c_ytd_payment, c_payment_cnt, c_delivery_cnt, c_data) VALUES (1, 1, 1, 'A', 'BARBAR', 10, 0, 0, 0, 'x'), (2, 1, 1, 'B', 'BARBAR', 10, 0, 0, 0, 'y')",
		"INSERT INTO new_order VALUES (2101, 1, 1), (2102, 1, 1)",
		"INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id) VALUES (2101, 1, 1, 1), (2102, 1, 1, 2)",
		"INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_quantity, ol_amount) VALUES (2101, 1, 1, 1, 1, 5, 1.5), (2102, 1, 1, 1, 2, 5, 2.5)",
		"INSERT INTO stock (s_i_id, s_w_id, s_quantity, s_ytd, s_order_cnt, s_remote_cnt) VALUES (1, 1, 50, 0, 0, 0), (2, 1, 50, 0, 0, 0)",
		"INSERT INTO item (i_id, i_price, i_name) VALUES (1, 1.5, 'one'), (2, 2.5, 'two')")
	for i := 1; i <= 20; i++ {
		mustExecAll(t, db, fmt.Sprintf("INSERT INTO sbtest1 VALUES (%d, %d, 'c%d', 'p')", i, i%5, i))
	}
	ranges := "SELECT count(k) FROM sbtest1 WHERE " + strings.TrimSuffix(strings.Repeat("k BETWEEN ? AND ? OR ", 10), " OR ")
	cases := []struct {
		q    string
		args []any
	}{
		// sysbench
		{"SELECT c FROM sbtest1 WHERE id=?", []any{3}},
		{"SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?", []any{2, 11}},
		{"SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?", []any{2, 11}},
		{"SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c", []any{2, 11}},
		{"SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c", []any{2, 11}},
		{"UPDATE sbtest1 SET k=k+1 WHERE id=?", []any{4}},
		{"UPDATE sbtest1 SET c=? WHERE id=?", []any{"new c", 5}},
		{"DELETE FROM sbtest1 WHERE id=?", []any{6}},
		{"SELECT id, k, c, pad FROM sbtest1 WHERE k IN (" + markers(10) + ")", []any{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{ranges, []any{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}},
		// go-tpc tpcc: new order
		{"SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse WHERE w_id = ? AND c_w_id = w_id AND c_d_id = ? AND c_id = ?", []any{1, 1, 1}},
		{"SELECT d_next_o_id, d_tax FROM district WHERE d_id = ? AND d_w_id = ? FOR UPDATE", []any{1, 1}},
		{"UPDATE district SET d_next_o_id = ? + 1 WHERE d_id = ? AND d_w_id = ?", []any{3001, 1, 1}},
		{"UPDATE stock SET s_quantity = ?, s_ytd = s_ytd + ?, s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + ? WHERE s_i_id = ? AND s_w_id = ?", []any{40, 5, 0, 1, 1}},
		{"SELECT i_price, i_name, i_data, i_id FROM item WHERE i_id IN (" + markers(5) + ")", []any{1, 2, 3, 4, 5}},
		{"SELECT s_i_id, s_quantity, s_data, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10 FROM stock WHERE (s_w_id, s_i_id) IN (" + tuples(5, 2) + ") FOR UPDATE", workloadArgs(5, 1, 1)},
		// payment
		{"UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = ?", []any{12.5, 1}},
		{"SELECT w_street_1, w_street_2, w_city, w_state, w_zip, w_name FROM warehouse WHERE w_id = ?", []any{1}},
		{"UPDATE district SET d_ytd = d_ytd + ? WHERE d_w_id = ? AND d_id = ?", []any{12.5, 1, 1}},
		{"SELECT d_street_1, d_street_2, d_city, d_state, d_zip, d_name FROM district WHERE d_w_id = ? AND d_id = ?", []any{1, 1}},
		{"SELECT c_id FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ? ORDER BY c_first", []any{1, 1, "BARBAR"}},
		{"SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_credit, c_credit_lim, c_discount, c_balance, c_since FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ? FOR UPDATE", []any{1, 1, 1}},
		{"SELECT c_data FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?", []any{1, 1, 1}},
		{"UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, c_payment_cnt = c_payment_cnt + 1, c_data = ? WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?", []any{1.5, 1.5, "data", 1, 1, 1}},
		{"UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?", []any{1.5, 1.5, 1, 1, 2}},
		// order status
		{"SELECT count(c_id) namecnt FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ?", []any{1, 1, "BARBAR"}},
		{"SELECT c_balance, c_first, c_middle, c_id FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ? ORDER BY c_first", []any{1, 1, "BARBAR"}},
		{"SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?", []any{1, 1, 1}},
		{"SELECT o_id, o_carrier_id, o_entry_d FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ? ORDER BY o_id DESC LIMIT 1", []any{1, 1, 1}},
		{"SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?", []any{1, 1, 2101}},
		// delivery
		{"SELECT no_o_id FROM new_order WHERE no_w_id = ? AND no_d_id = ? ORDER BY no_o_id ASC LIMIT 1 FOR UPDATE", []any{1, 1}},
		{"DELETE FROM new_order WHERE (no_w_id, no_d_id, no_o_id) IN (" + tuples(10, 3) + ")", workloadArgs(10, 1, 1, 2101)},
		{"UPDATE orders SET o_carrier_id = ? WHERE (o_w_id, o_d_id, o_id) IN (" + tuples(10, 3) + ")", append([]any{7}, workloadArgs(10, 1, 1, 2101)...)},
		{"SELECT o_d_id, o_c_id FROM orders WHERE (o_w_id, o_d_id, o_id) IN (" + tuples(10, 3) + ")", workloadArgs(10, 1, 1, 2101)},
		{"UPDATE order_line SET ol_delivery_d = ? WHERE (ol_w_id, ol_d_id, ol_o_id) IN (" + tuples(10, 3) + ")", append([]any{"2026-12-07 10:00:00"}, workloadArgs(10, 1, 1, 2101)...)},
		{"SELECT ol_d_id, SUM(ol_amount) FROM order_line WHERE (ol_w_id, ol_d_id, ol_o_id) IN (" + tuples(10, 3) + ") GROUP BY ol_d_id", workloadArgs(10, 1, 1, 2101)},
		{"UPDATE customer SET c_balance = c_balance + ?, c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?", []any{2.5, 1, 1, 1}},
		// stock level
		{"SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?", []any{1, 1}},
		{"SELECT /*+ TIDB_INLJ(order_line,stock) */ COUNT(DISTINCT (s_i_id)) stock_count FROM order_line, stock WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= ? - 20 AND s_w_id = ? AND s_i_id = ol_i_id AND s_quantity < ?", []any{1, 1, 3001, 3001, 1, 60}},
	}
	var planned []string
	for _, tc := range cases {
		st, err := db.Prepare(tc.q)
		require.NoError(t, err, tc.q)
		exec := func(st *sql.Stmt) {
			if strings.HasPrefix(tc.q, "SELECT") {
				rs, err := st.Query(tc.args...)
				require.NoError(t, err, tc.q)
				for rs.Next() {
				}
				require.NoError(t, rs.Close(), tc.q)
				return
			}
			_, err := st.Exec(tc.args...)
			require.NoError(t, err, tc.q)
		}
		exec(st)
		exec(st)
		var hit int
		require.NoError(t, db.QueryRow("SELECT @@last_plan_from_cache").Scan(&hit))
		if hit != 1 {
			exec(st)
			var level, msg string
			var code int
			reason := "no warning"
			if err := db.QueryRow("SHOW WARNINGS").Scan(&level, &code, &msg); err == nil {
				reason = msg
			}
			planned = append(planned, tc.q+": "+reason)
		}
		require.NoError(t, st.Close())
	}
	require.Empty(t, planned, "planned at every execution:\n%s", strings.Join(planned, "\n"))
}

// BenchmarkPreparedUpdate: an UPDATE by primary key (sysbench's
// oltp_update_non_index; autocommit) through the binary protocol, its
// read plan served from the plan cache (hit) against planned at every
// execution (miss: the key parameter alternates between an integer and a
// string, whose kinds key the cache apart, so each execution plans; the
// string converts to the same point get).
func BenchmarkPreparedUpdate(b *testing.B) {
	db := sbtestSession(b)
	// write: each execution changes its row (a commit with a write);
	// same: it finds its row unchanged (no write: the statement's own
	// work, planning included, is most of the time).
	for _, v := range []struct{ name, q, c string }{
		{"write", "UPDATE sbtest SET c = ? WHERE id = ?", ""},
		{"same", "UPDATE sbtest SET k = k + ? WHERE id = ?", "0"},
	} {
		stmt, err := db.Prepare(v.q)
		require.NoError(b, err)
		want := int64(1)
		if v.c != "" {
			want = 0
		}
		run := func(name string, key func(i int) any) {
			b.Run(v.name+"/"+name, func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					arg := any(fmt.Sprintf("c%d", i))
					if v.c != "" {
						arg = 0
					}
					res, err := stmt.Exec(arg, key(i))
					if err != nil {
						b.Fatal(err)
					}
					if n, err := res.RowsAffected(); err != nil || n != want {
						b.Fatalf("%d rows, %v", n, err)
					}
				}
			})
		}
		run("hit", func(i int) any { return i%100 + 1 })
		run("miss", func(i int) any {
			if i%2 == 0 {
				return i%100 + 1
			}
			return fmt.Sprint(i%100 + 1)
		})
		require.NoError(b, stmt.Close())
	}
}
