package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// probeStmt is one statement shape sysbench sends (from the captures in
// ../shared/suites/captures/sb_*.shapes.txt), with concrete values.
type probeStmt struct {
	what string // which sysbench step sends it
	sql  string
	args []any // non-nil: sent as a server-side prepared statement
}

func inArgs(n int, f func(i int) int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

var probeStmts = []probeStmt{
	{"prepare", "CREATE TABLE sbtest1(\n  id INTEGER NOT NULL AUTO_INCREMENT,\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  PRIMARY KEY (id)\n) /*! ENGINE = innodb */ ", nil},
	{"prepare", "INSERT INTO sbtest1(k, c, pad) VALUES(5, 'c-one', 'pad-one'),(7, 'c-two', 'pad-two'),(5, 'c-three', 'pad-three')", nil},
	{"prepare (create_secondary=on, the default)", "CREATE INDEX k_1 ON sbtest1(k)", nil},
	{"oltp_point_select, read_only, read_write", "SELECT c FROM sbtest1 WHERE id=?", []any{1}},
	{"read_only, read_write", "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?", []any{1, 100}},
	{"read_only, read_write", "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?", []any{1, 100}},
	{"read_only, read_write", "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c", []any{1, 100}},
	{"read_only, read_write", "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c", []any{1, 100}},
	{"oltp_update_index, write_only, read_write", "UPDATE sbtest1 SET k=k+1 WHERE id=?", []any{1}},
	{"oltp_update_non_index, write_only, read_write", "UPDATE sbtest1 SET c=? WHERE id=?", []any{"c-new", 2}},
	{"oltp_delete, write_only, read_write", "DELETE FROM sbtest1 WHERE id=?", []any{3}},
	{"write_only, read_write", "INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)", []any{3, 9, "c-again", "pad-again"}},
	{"oltp_insert (auto_inc=on: id 0 means next value)", "INSERT INTO sbtest1 (id, k, c, pad) VALUES (0, 11, 'c-ins', 'pad-ins')", nil},
	{"read_only, write_only, read_write (skip_trx=off, the default)", "BEGIN", []any{}},
	{"read_only, write_only, read_write (skip_trx=off, the default)", "COMMIT", []any{}},
	{"select_random_points", "SELECT id, k, c, pad FROM sbtest1 WHERE k IN (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", inArgs(10, func(i int) int { return i + 1 })},
	{"select_random_ranges", "SELECT count(k) FROM sbtest1 WHERE k BETWEEN ? AND ? OR k BETWEEN ? AND ? OR k BETWEEN ? AND ? OR k BETWEEN ? AND ? OR k BETWEEN ? AND ? OR k BETWEEN ? AND ? OR k BETWEEN ? AND ? OR k BETWEEN ? AND ? OR k BETWEEN ? AND ? OR k BETWEEN ? AND ?", inArgs(20, func(i int) int { return i })},
	{"prewarm", "SET tmp_table_size=2*1024*1024*1024", nil},
	{"prewarm", "SET max_heap_table_size=2*1024*1024*1024", nil},
	{"prewarm", "ANALYZE TABLE sbtest1", nil},
	{"prewarm", "SELECT AVG(id) FROM (SELECT * FROM sbtest1 FORCE KEY (PRIMARY) LIMIT 10000) t", nil},
	{"prewarm", "SELECT COUNT(*) FROM (SELECT * FROM sbtest1 WHERE k LIKE '%0%' LIMIT 10000) t", nil},
	{"bulk_insert prepare", "CREATE TABLE IF NOT EXISTS sbtest2 (\nid INTEGER NOT NULL,\nk INTEGER DEFAULT '0' NOT NULL,\nPRIMARY KEY (id))", nil},
	{"bulk_insert run", "INSERT INTO sbtest2 VALUES(1,1),(2,2),(3,3)", nil},
	{"cleanup", "DROP TABLE IF EXISTS sbtest1", nil},
	{"cleanup", "DROP TABLE IF EXISTS sbtest2", nil},
}

// probe sends every statement shape sysbench uses to each target and
// writes which ones it answers with an error.
func probe(ctx context.Context, cfg config, sess *session, tgts []target) error {
	results := map[string][]string{}
	for _, t := range tgts {
		if err := t.Setup(ctx); err != nil {
			return fmt.Errorf("%s: %w", t.Name(), err)
		}
		dcfg := mysql.NewConfig()
		dcfg.User, dcfg.Net, dcfg.Addr, dcfg.DBName = "root", "tcp", "127.0.0.1:"+strconv.Itoa(t.Port()), "sbtest"
		dcfg.Timeout = 5 * time.Second
		db, err := sql.Open("mysql", dcfg.FormatDSN())
		if err != nil {
			return err
		}
		db.SetMaxOpenConns(1)
		for _, ps := range probeStmts {
			results[t.Name()] = append(results[t.Name()], runProbe(ctx, db, ps))
		}
		db.Close()
		sess.Versions[t.Name()] = t.Version()
		t.Teardown()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# sysbench statement probe — %s\n\n", sess.Stamp)
	b.WriteString("Every statement shape sysbench 1.0.20 sends (see ../shared/suites/captures/sb_*.shapes.txt), run once on an empty database in order; `?` statements are sent as server-side prepared statements (COM_STMT_PREPARE + EXECUTE), the others as COM_QUERY.\n\n")
	s := sess
	s.headerEnv(&b, cfg)
	b.WriteString("| sent by | statement |")
	for _, t := range tgts {
		b.WriteString(" " + t.Name() + " |")
	}
	b.WriteString("\n|---|---|")
	for range tgts {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for i, ps := range probeStmts {
		kind := ""
		if ps.args != nil {
			kind = " (prepared)"
		}
		fmt.Fprintf(&b, "| %s | `%s`%s |", ps.what, mdEscape(strings.Join(strings.Fields(ps.sql), " ")), kind)
		for _, t := range tgts {
			fmt.Fprintf(&b, " %s |", mdEscape(results[t.Name()][i]))
		}
		b.WriteString("\n")
	}
	path := s.stem(cfg, "probe") + ".md"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	logf("wrote %s", path)
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func runProbe(ctx context.Context, db *sql.DB, ps probeStmt) string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var rows *sql.Rows
	var err error
	if ps.args != nil {
		var st *sql.Stmt
		st, err = db.PrepareContext(ctx, ps.sql)
		if err == nil {
			rows, err = st.QueryContext(ctx, ps.args...)
			defer st.Close()
		}
	} else {
		rows, err = db.QueryContext(ctx, ps.sql)
	}
	if err != nil {
		return "ERROR " + shorten(err.Error(), 160)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	if err := rows.Err(); err != nil {
		return "ERROR " + shorten(err.Error(), 160)
	}
	if cols, _ := rows.Columns(); len(cols) > 0 {
		return fmt.Sprintf("ok, %d row(s)", n)
	}
	return "ok"
}
