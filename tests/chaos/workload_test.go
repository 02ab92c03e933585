package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stratadb/strata/pd/pdclient"
	"github.com/stratadb/strata/tests/chaos/checker"
)

func execAll(ctx context.Context, db *sql.DB, stmts ...string) error {
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// autocommit runs one autocommit write statement and returns its
// completion and rows affected.
func autocommit(ctx context.Context, db *sql.DB, q string, args ...any) (checker.Type, int64, error) {
	res, err := db.ExecContext(ctx, q, args...)
	if err != nil {
		return classify(err, true), 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return checker.Info, 0, err
	}
	return checker.OK, n, nil
}

// ---- bank ----

const (
	bankAccounts = 8
	bankTotal    = 800
)

// bank: transfers between 8 accounts keep the total at 800; every read of
// all balances, in one statement or across the statements of one
// transaction, sums to it with no account missing or negative.
type bank struct{}

type transfer struct {
	From, To, Amount int
	Style            string // "for-update" (read-modify-write) or "delta" (bal = bal ± x)
	Optimistic       bool
}

type bankRead struct {
	Split      bool // two statements in one transaction
	Optimistic bool
}

func (bank) setup(ctx context.Context, db *sql.DB) error {
	stmts := []string{"CREATE TABLE bank (id INT PRIMARY KEY, bal BIGINT NOT NULL)"}
	for i := range bankAccounts {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO bank VALUES (%d, %d)", i, bankTotal/bankAccounts))
	}
	return execAll(ctx, db, stmts...)
}

func (bank) next(rng *rand.Rand, p int) (string, any) {
	if rng.IntN(10) < 4 {
		return "read", bankRead{Split: rng.IntN(2) == 0, Optimistic: rng.IntN(2) == 0}
	}
	from := rng.IntN(bankAccounts)
	to := (from + 1 + rng.IntN(bankAccounts-1)) % bankAccounts
	style := "for-update"
	if rng.IntN(2) == 0 {
		style = "delta"
	}
	return "transfer", transfer{From: from, To: to, Amount: 1 + rng.IntN(5), Style: style, Optimistic: rng.IntN(2) == 0}
}

func (bank) run(ctx context.Context, db *sql.DB, f string, v any) (checker.Type, any, error) {
	if f == "read" {
		r := v.(bankRead)
		bal := map[int]int64{}
		scan := func(q querier, where string) error {
			rows, err := q.QueryContext(ctx, "SELECT id, bal FROM bank"+where)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var id int
				var b int64
				if err := rows.Scan(&id, &b); err != nil {
					return err
				}
				bal[id] = b
			}
			return rows.Err()
		}
		if !r.Split {
			if err := scan(db, ""); err != nil {
				return checker.Fail, nil, err
			}
			return checker.OK, bal, nil
		}
		typ, err := inTxn(ctx, db, r.Optimistic, func(c *sql.Conn) error {
			if err := scan(c, " WHERE id < 4"); err != nil {
				return err
			}
			return scan(c, " WHERE id >= 4")
		})
		if err != nil {
			// A read-only transaction commits nothing.
			return checker.Fail, nil, err
		}
		return typ, bal, nil
	}
	tr := v.(transfer)
	typ, err := inTxn(ctx, db, tr.Optimistic, func(c *sql.Conn) error {
		if tr.Style == "delta" {
			res, err := c.ExecContext(ctx, "UPDATE bank SET bal = bal - ? WHERE id = ? AND bal >= ?", tr.Amount, tr.From, tr.Amount)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n != 1 {
				return errInsufficient
			}
			_, err = c.ExecContext(ctx, "UPDATE bank SET bal = bal + ? WHERE id = ?", tr.Amount, tr.To)
			return err
		}
		rows, err := c.QueryContext(ctx, "SELECT id, bal FROM bank WHERE id IN (?, ?) FOR UPDATE", tr.From, tr.To)
		if err != nil {
			return err
		}
		bal := map[int]int64{}
		for rows.Next() {
			var id int
			var b int64
			if err := rows.Scan(&id, &b); err != nil {
				rows.Close()
				return err
			}
			bal[id] = b
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if len(bal) != 2 {
			return fmt.Errorf("transfer read %d of accounts %d and %d", len(bal), tr.From, tr.To)
		}
		if bal[tr.From] < int64(tr.Amount) {
			return errInsufficient
		}
		if _, err := c.ExecContext(ctx, "UPDATE bank SET bal = ? WHERE id = ?", bal[tr.From]-int64(tr.Amount), tr.From); err != nil {
			return err
		}
		_, err = c.ExecContext(ctx, "UPDATE bank SET bal = ? WHERE id = ?", bal[tr.To]+int64(tr.Amount), tr.To)
		return err
	})
	return typ, v, err
}

var errInsufficient = errors.New("insufficient balance: nothing transferred")

type querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

func (bank) splitKeys(rng *rand.Rand) (string, []int) {
	return "bank", []int{1 + rng.IntN(bankAccounts-1)}
}

func (bank) final() []finalOp { return []finalOp{{"read", bankRead{}}} }

func (bank) check(h []checker.Op) (*checker.Result, error) {
	return checker.Bank(h, bankAccounts, bankTotal, true)
}

// ---- register ----

// register: reads, writes and compare-and-sets of single rows through both
// SQL nodes (autocommit), linearizable per key. Keys retire after about
// 300 operations so each key's history stays short enough to check.
type register struct{ ops atomic.Int64 }

func (*register) setup(ctx context.Context, db *sql.DB) error {
	return execAll(ctx, db, "CREATE TABLE reg (id INT PRIMARY KEY, v INT NOT NULL)")
}

func (w *register) next(rng *rand.Rand, p int) (string, any) {
	k := int(w.ops.Add(1)/300)*5 + rng.IntN(5)
	switch n := rng.IntN(4); {
	case n < 2:
		return "read", checker.RegisterOp{Key: k}
	case n == 2:
		return "write", checker.RegisterOp{Key: k, Value: 1 + rng.IntN(5)}
	default:
		from := 1 + rng.IntN(5)
		return "cas", checker.RegisterOp{Key: k, From: from, To: 1 + (from+rng.IntN(4))%5}
	}
}

func (*register) run(ctx context.Context, db *sql.DB, f string, v any) (checker.Type, any, error) {
	op := v.(checker.RegisterOp)
	switch f {
	case "read":
		err := db.QueryRowContext(ctx, "SELECT v FROM reg WHERE id = ?", op.Key).Scan(&op.Value)
		if errors.Is(err, sql.ErrNoRows) {
			op.Value, err = 0, nil // never written
		}
		if err != nil {
			return checker.Fail, nil, err
		}
		return checker.OK, op, nil
	case "write":
		typ, _, err := autocommit(ctx, db, "INSERT INTO reg VALUES (?, ?) ON DUPLICATE KEY UPDATE v = ?", op.Key, op.Value, op.Value)
		return typ, op, err
	}
	typ, n, err := autocommit(ctx, db, "UPDATE reg SET v = ? WHERE id = ? AND v = ?", op.To, op.Key, op.From)
	op.Swapped = n == 1
	return typ, op, err
}

func (*register) final() []finalOp { return nil }

func (w *register) splitKeys(rng *rand.Rand) (string, []int) {
	return "reg", []int{int(w.ops.Load()/300)*5 + rng.IntN(5)}
}

func (*register) check(h []checker.Op) (*checker.Result, error) {
	return checker.Register(h, time.Minute)
}

// ---- append ----

// appendWL: Elle list-append transactions of 1-4 reads and appends over a
// sliding window of 8 keys. Optimistic transactions must be snapshot
// isolated; pessimistic ones lock what they read (SELECT ... FOR UPDATE)
// and what they append, so they must be serializable: the checker's G2-item
// cycles count as failures for them.
type appendWL struct {
	pessimistic bool
	ops, elems  atomic.Int64
}

func (*appendWL) setup(ctx context.Context, db *sql.DB) error {
	return execAll(ctx, db, "CREATE TABLE app (k INT PRIMARY KEY, v TEXT NOT NULL)")
}

func (w *appendWL) next(rng *rand.Rand, p int) (string, any) {
	base := int(w.ops.Add(1)/400) * 8
	t := make(checker.Txn, 1+rng.IntN(4))
	for i := range t {
		k := base + rng.IntN(8)
		if rng.IntN(2) == 0 {
			t[i] = checker.Mop{Key: k}
		} else {
			t[i] = checker.Mop{Append: true, Key: k, Value: int(w.elems.Add(1))}
		}
	}
	return "txn", t
}

func (w *appendWL) run(ctx context.Context, db *sql.DB, f string, v any) (checker.Type, any, error) {
	in := v.(checker.Txn)
	out := make(checker.Txn, len(in))
	read := "SELECT v FROM app WHERE k = ?"
	if w.pessimistic {
		read += " FOR UPDATE"
	}
	typ, err := inTxn(ctx, db, !w.pessimistic, func(c *sql.Conn) error {
		for i, m := range in {
			out[i] = m
			if m.Append {
				s := strconv.Itoa(m.Value)
				if _, err := c.ExecContext(ctx, "INSERT INTO app VALUES (?, ?) ON DUPLICATE KEY UPDATE v = CONCAT(v, ',', ?)", m.Key, s, s); err != nil {
					return err
				}
				continue
			}
			var s string
			err := c.QueryRowContext(ctx, read, m.Key).Scan(&s)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			out[i].List = []int{}
			for _, e := range strings.Split(s, ",") {
				if e == "" {
					continue
				}
				n, err := strconv.Atoi(e)
				if err != nil {
					return fmt.Errorf("key %d holds %q: %w", m.Key, s, err)
				}
				out[i].List = append(out[i].List, n)
			}
		}
		return nil
	})
	return typ, out, err
}

func (*appendWL) final() []finalOp { return nil }

func (w *appendWL) splitKeys(rng *rand.Rand) (string, []int) {
	return "app", []int{int(w.ops.Load()/400)*8 + rng.IntN(8)}
}

func (w *appendWL) check(h []checker.Op) (*checker.Result, error) {
	r, err := checker.ListAppend(h)
	if err != nil {
		return nil, err
	}
	if w.pessimistic {
		// Locking reads and writes: not even write skew.
		for _, a := range r.Allowed {
			r.Result.Valid = false
			r.Result.Anomalies = append(r.Result.Anomalies, a)
		}
	}
	return &r.Result, nil
}

// ---- set ----

// set: unique autocommit inserts; after the faults heal, a read holds
// every acknowledged one.
type set struct{ seq atomic.Int64 }

func (*set) setup(ctx context.Context, db *sql.DB) error {
	return execAll(ctx, db, "CREATE TABLE st (id INT PRIMARY KEY)")
}

func (w *set) next(*rand.Rand, int) (string, any) { return "add", int(w.seq.Add(1)) }

func (*set) run(ctx context.Context, db *sql.DB, f string, v any) (checker.Type, any, error) {
	if f == "add" {
		typ, _, err := autocommit(ctx, db, "INSERT INTO st VALUES (?)", v.(int))
		return typ, v, err
	}
	rows, err := db.QueryContext(ctx, "SELECT id FROM st")
	if err != nil {
		return checker.Fail, nil, err
	}
	defer rows.Close()
	var ids []int
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			return checker.Fail, nil, err
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return checker.Fail, nil, err
	}
	return checker.OK, ids, nil
}

func (*set) final() []finalOp { return []finalOp{{"read", nil}} }

func (w *set) splitKeys(rng *rand.Rand) (string, []int) {
	return "st", []int{1 + rng.IntN(int(w.seq.Load())+1)}
}

func (*set) check(h []checker.Op) (*checker.Result, error) {
	r, _, err := checker.Set(h)
	return r, err
}

// ---- monotonic ----

// monotonic: a counter incremented by autocommit UPDATEs, read through
// both SQL nodes, and PD's timestamps (the TSO every transaction starts
// from) never go backwards in real time, across PD restarts too. The final
// counter lies between the acknowledged increments and those plus the
// unknown ones.
type monotonic struct {
	pd func() *pdclient.Client
}

func (*monotonic) setup(ctx context.Context, db *sql.DB) error {
	return execAll(ctx, db, "CREATE TABLE cnt (id INT PRIMARY KEY, v BIGINT NOT NULL)", "INSERT INTO cnt VALUES (0, 0)")
}

func (*monotonic) next(rng *rand.Rand, p int) (string, any) {
	switch rng.IntN(3) {
	case 0:
		return "incr", nil
	case 1:
		return "read", "counter"
	}
	return "read", "tso"
}

func (w *monotonic) run(ctx context.Context, db *sql.DB, f string, v any) (checker.Type, any, error) {
	if f == "incr" {
		typ, _, err := autocommit(ctx, db, "UPDATE cnt SET v = v + 1 WHERE id = 0")
		return typ, nil, err
	}
	if v == "tso" {
		ts, err := w.pd().GetTS(ctx)
		if err != nil {
			return checker.Fail, nil, err
		}
		return checker.OK, checker.MonoRead{Key: "tso", Value: int64(ts)}, nil
	}
	var n int64
	if err := db.QueryRowContext(ctx, "SELECT v FROM cnt WHERE id = 0").Scan(&n); err != nil {
		return checker.Fail, nil, err
	}
	return checker.OK, checker.MonoRead{Key: "counter", Value: n}, nil
}

func (*monotonic) final() []finalOp { return []finalOp{{"read", "counter"}} }

// splitKeys splits cnt right after its one row, so the row's region
// changes under the increments.
func (*monotonic) splitKeys(*rand.Rand) (string, []int) { return "cnt", []int{1} }

func (*monotonic) check(h []checker.Op) (*checker.Result, error) {
	r, err := checker.Monotonic(h)
	if err != nil {
		return nil, err
	}
	// The last read (the final one, after healing) bounds the increments.
	pairs, err := checker.Pairs(h)
	if err != nil {
		return nil, err
	}
	var ok, info int64
	var last *checker.Op
	for _, p := range pairs {
		switch {
		case p.Invoke.F == "incr" && p.Complete.Type == checker.OK:
			ok++
		case p.Invoke.F == "incr" && p.Complete.Type == checker.Info:
			info++
		case p.Invoke.F == "read" && p.Invoke.Value == "counter" && p.Complete.Type == checker.OK:
			c := p.Complete
			last = &c
		}
	}
	if last == nil {
		r.Valid = false
		r.Anomalies = append(r.Anomalies, checker.Anomaly{Kind: "no-read", Message: "the counter was never read"})
		return r, nil
	}
	if n := last.Value.(checker.MonoRead).Value; n < ok || n > ok+info {
		r.Valid = false
		r.Anomalies = append(r.Anomalies, checker.Anomaly{Kind: "lost-increment",
			Message: fmt.Sprintf("the final counter is %d; %d increments were acknowledged and %d are unknown", n, ok, info), Ops: []checker.Op{*last}})
	}
	return r, nil
}
