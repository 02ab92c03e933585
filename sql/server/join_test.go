package server_test

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestJoinsMatchNestedLoop runs inner and left joins on integer and string
// keys (NULLs, duplicates, more outer rows than one 256-row chunk) as an
// IndexJoin (inner table looked up by handle or index per chunk) and, with
// the inner table's indexes hinted away, as a HashJoin, and compares both
// with a nested loop computed here.
func TestJoinsMatchNestedLoop(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "")
	seed := uint64(time.Now().UnixNano())
	rnd := rand.New(rand.NewPCG(12, seed))
	t.Logf("seed %d", seed)
	type row struct {
		id int
		k  *int
		s  *string
	}
	strs := []string{"a", "b", "A", "b ", ""}
	gen := func(n, kmax int) []row {
		rows := make([]row, n)
		for i := range rows {
			rows[i].id = i
			if rnd.IntN(6) != 0 {
				k := rnd.IntN(kmax)
				rows[i].k = &k
			}
			if rnd.IntN(6) != 0 {
				rows[i].s = &strs[rnd.IntN(len(strs))]
			}
		}
		return rows
	}
	lit := func(r row) string {
		k, s := "NULL", "NULL"
		if r.k != nil {
			k = strconv.Itoa(*r.k)
		}
		if r.s != nil {
			s = "'" + *r.s + "'"
		}
		return fmt.Sprintf("(%d, %s, %s)", r.id, k, s)
	}
	load := func(name string, rows []row) {
		_, err := db.Exec("CREATE TABLE " + name + " (id INT PRIMARY KEY, k INT, s VARCHAR(4), KEY ik (k), KEY is_ (s))")
		require.NoError(t, err)
		for start := 0; start < len(rows); start += 100 {
			var vals []string
			for _, r := range rows[start:min(start+100, len(rows))] {
				vals = append(vals, lit(r))
			}
			_, err := db.Exec("INSERT INTO " + name + " VALUES " + strings.Join(vals, ", "))
			require.NoError(t, err)
		}
	}
	p, q := gen(700, 40), gen(300, 60)
	load("p", p)
	load("q", q)

	eqInt := func(a, b *int) bool { return a != nil && b != nil && *a == *b }
	eqStr := func(a, b *string) bool { return a != nil && b != nil && *a == *b }
	cases := []struct {
		on    string
		match func(pr, qr row) bool
	}{
		{"p.k = q.k", func(pr, qr row) bool { return eqInt(pr.k, qr.k) }},
		{"q.id = p.k", func(pr, qr row) bool { return pr.k != nil && *pr.k == qr.id }},
		{"p.s = q.s", func(pr, qr row) bool { return eqStr(pr.s, qr.s) }},
		{"p.k = q.k AND q.s <> 'a'", func(pr, qr row) bool { return eqInt(pr.k, qr.k) && qr.s != nil && *qr.s != "a" }},
	}
	for range 6 {
		lo := rnd.IntN(200)
		hi := lo + rnd.IntN(600)
		for _, c := range cases {
			for _, left := range []bool{false, true} {
				var want [][]string
				for _, pr := range p[lo:min(hi+1, len(p))] {
					matched := false
					for _, qr := range q {
						if c.match(pr, qr) {
							matched = true
							want = append(want, []string{strconv.Itoa(pr.id), strconv.Itoa(qr.id)})
						}
					}
					if left && !matched {
						want = append(want, []string{strconv.Itoa(pr.id), "NULL"})
					}
				}
				join := "JOIN"
				if left {
					join = "LEFT JOIN"
				}
				q := fmt.Sprintf("SELECT p.id, q.id FROM p %s q %%s ON %s WHERE p.id BETWEEN %d AND %d", join, c.on, lo, hi)
				for _, hint := range []string{"", "IGNORE INDEX (ik, is_)"} {
					stmt := fmt.Sprintf(q, hint)
					plan := queryStrings(t, db, "EXPLAIN "+stmt)
					op := "HashJoin"
					if hint == "" {
						op = "IndexJoin"
					}
					require.True(t, strings.Contains(plan[1][0], op), "%s: want %s, plan %v", stmt, op, plan)
					got := queryStrings(t, db, stmt)
					sortRows(got)
					sortRows(want)
					require.Equal(t, want, got, "%s (seed %d)", stmt, seed)
				}
				// The same join prepared (go-tpc prepares its statements),
				// run twice on the statement.
				ps, err := db.Prepare(strings.Replace(fmt.Sprintf(q, ""), fmt.Sprintf("BETWEEN %d AND %d", lo, hi), "BETWEEN ? AND ?", 1))
				require.NoError(t, err)
				for range 2 {
					rows, err := ps.Query(lo, hi)
					require.NoError(t, err)
					var got [][]string
					for rows.Next() {
						var a, b sql.NullString
						require.NoError(t, rows.Scan(&a, &b))
						if !b.Valid {
							b.String = "NULL"
						}
						got = append(got, []string{a.String, b.String})
					}
					require.NoError(t, rows.Err())
					sortRows(got)
					require.Equal(t, want, got, "prepared %s (seed %d)", q, seed)
				}
				require.NoError(t, ps.Close())
			}
		}
	}

	// Three tables in every FROM order: the planner reorders the joins
	// (no order may join two unconnected tables first), and the result
	// is the nested loop's whatever the statement's order.
	r := gen(200, 40)
	load("r", r)
	var want [][]string
	for _, pr := range p {
		for _, rr := range r {
			if !eqInt(rr.k, pr.k) {
				continue
			}
			for _, qr := range q {
				if qr.k != nil && *qr.k == rr.id && eqStr(qr.s, pr.s) {
					want = append(want, []string{strconv.Itoa(pr.id), strconv.Itoa(qr.id), strconv.Itoa(rr.id)})
				}
			}
		}
	}
	sortRows(want)
	for _, from := range []string{"p, q, r", "p, r, q", "q, p, r", "q, r, p", "r, p, q", "r, q, p"} {
		stmt := "SELECT p.id, q.id, r.id FROM " + from + " WHERE r.k = p.k AND q.k = r.id AND p.s = q.s"
		got := queryStrings(t, db, stmt)
		sortRows(got)
		require.Equal(t, want, got, "%s (seed %d)", stmt, seed)
	}
}

func sortRows(rows [][]string) {
	slices.SortFunc(rows, func(x, y []string) int {
		for i := range x {
			a, errA := strconv.Atoi(x[i])
			b, errB := strconv.Atoi(y[i])
			if errA == nil && errB == nil {
				if a != b {
					return a - b
				}
				continue
			}
			if c := strings.Compare(x[i], y[i]); c != 0 {
				return c
			}
		}
		return 0
	})
}
