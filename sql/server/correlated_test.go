package server_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCorrelatedMatchNestedLoop runs correlated EXISTS, NOT EXISTS, IN,
// NOT IN and scalar subqueries on random data with NULLs and duplicates,
// once in the form the planner decorrelates (equalities to outer
// columns, a hash lookup) and once with an extra outer condition that
// keeps them correlated (re-run per outer value), and compares both with
// a nested loop computed here with MySQL's three-valued logic.
func TestCorrelatedMatchNestedLoop(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "")
	seed := uint64(time.Now().UnixNano())
	rnd := rand.New(rand.NewPCG(7, seed))
	t.Logf("seed %d", seed)
	type row struct {
		id   int
		k, v *int
		s    *string
	}
	strs := []string{"a", "b", "c", ""}
	gen := func(n, kmax int) []row {
		rows := make([]row, n)
		for i := range rows {
			rows[i].id = i
			if rnd.IntN(5) != 0 {
				k := rnd.IntN(kmax)
				rows[i].k = &k
			}
			if rnd.IntN(5) != 0 {
				v := rnd.IntN(100)
				rows[i].v = &v
			}
			if rnd.IntN(5) != 0 {
				rows[i].s = &strs[rnd.IntN(len(strs))]
			}
		}
		return rows
	}
	num := func(p *int) string {
		if p == nil {
			return "NULL"
		}
		return strconv.Itoa(*p)
	}
	load := func(name string, rows []row) {
		_, err := db.Exec("CREATE TABLE " + name + " (id INT PRIMARY KEY, k INT, v INT, s VARCHAR(4), KEY ik (k))")
		require.NoError(t, err)
		var vals []string
		for _, r := range rows {
			s := "NULL"
			if r.s != nil {
				s = "'" + *r.s + "'"
			}
			vals = append(vals, fmt.Sprintf("(%d, %s, %s, %s)", r.id, num(r.k), num(r.v), s))
		}
		_, err = db.Exec("INSERT INTO " + name + " VALUES " + strings.Join(vals, ", "))
		require.NoError(t, err)
	}
	p, q := gen(120, 15), gen(80, 20)
	load("p", p)
	load("q", q)

	// tri is MySQL's boolean: 0, 1 or NULL (-1).
	const null = -1
	tri := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	eqInt := func(a, b *int) int {
		if a == nil || b == nil {
			return null
		}
		return tri(*a == *b)
	}
	eqStr := func(a, b *string) int {
		if a == nil || b == nil {
			return null
		}
		return tri(*a == *b)
	}
	and := func(a, b int) int {
		if a == 0 || b == 0 {
			return 0
		}
		if a == null || b == null {
			return null
		}
		return 1
	}
	matches := func(pr row, where func(pr, qr row) int) []row {
		var out []row
		for _, qr := range q {
			if where(pr, qr) == 1 {
				out = append(out, qr)
			}
		}
		return out
	}
	in := func(l *int, rows []row) int { // l IN (rows' k)
		res := 0
		for _, r := range rows {
			switch eqInt(l, r.k) {
			case 1:
				return 1
			case null:
				res = null
			}
		}
		return res
	}
	not := func(x int) int {
		if x == null {
			return null
		}
		return 1 - x
	}
	text := func(x int) string {
		if x == null {
			return "NULL"
		}
		return strconv.Itoa(x)
	}
	type tc struct {
		sub   string // the subquery expression; %s is where the correlated WHERE goes
		where string
		match func(pr, qr row) int
		val   func(pr row, rows []row) string
	}
	kEq := func(pr, qr row) int { return eqInt(qr.k, pr.k) }
	ksEq := func(pr, qr row) int { return and(eqInt(qr.k, pr.k), eqStr(qr.s, pr.s)) }
	sEq := func(pr, qr row) int { return eqStr(qr.s, pr.s) }
	cases := []tc{
		{"EXISTS (SELECT * FROM q WHERE %s)", "q.k = p.k", kEq, func(pr row, rows []row) string { return text(tri(len(rows) > 0)) }},
		{"NOT EXISTS (SELECT * FROM q WHERE %s)", "q.k = p.k AND q.s = p.s", ksEq, func(pr row, rows []row) string { return text(tri(len(rows) == 0)) }},
		{"p.k IN (SELECT k FROM q WHERE %s)", "q.s = p.s", sEq, func(pr row, rows []row) string { return text(in(pr.k, rows)) }},
		{"p.k NOT IN (SELECT k FROM q WHERE %s)", "q.s = p.s", sEq, func(pr row, rows []row) string { return text(not(in(pr.k, rows))) }},
		{"(SELECT count(*) FROM q WHERE %s)", "q.k = p.k", kEq, func(pr row, rows []row) string { return strconv.Itoa(len(rows)) }},
		{"(SELECT max(v) FROM q WHERE %s)", "q.s = p.s AND q.k = p.k", ksEq, func(pr row, rows []row) string {
			var m *int
			for _, r := range rows {
				if r.v != nil && (m == nil || *r.v > *m) {
					m = r.v
				}
			}
			return num(m)
		}},
		{"EXISTS (SELECT * FROM q WHERE %s)", "q.k > p.k", func(pr, qr row) int {
			if pr.k == nil || qr.k == nil {
				return null
			}
			return tri(*qr.k > *pr.k)
		}, func(pr row, rows []row) string { return text(tri(len(rows) > 0)) }},
	}
	for _, c := range cases {
		var want [][]string
		for _, pr := range p {
			want = append(want, []string{strconv.Itoa(pr.id), c.val(pr, matches(pr, c.match))})
		}
		for _, extra := range []string{"", " AND p.id > -1"} {
			stmt := fmt.Sprintf("SELECT id, "+c.sub+" FROM p ORDER BY id", c.where+extra)
			require.Equal(t, want, queryStrings(t, db, stmt), "%s (seed %d)", stmt, seed)
			// The same condition in WHERE keeps the rows where it is true.
			var wantIDs [][]string
			for _, w := range want {
				if w[1] != "0" && w[1] != "NULL" {
					wantIDs = append(wantIDs, w[:1])
				}
			}
			stmt = fmt.Sprintf("SELECT id FROM p WHERE "+c.sub+" ORDER BY id", c.where+extra)
			require.Equal(t, wantIDs, queryStrings(t, db, stmt), "%s (seed %d)", stmt, seed)
		}
	}
}
