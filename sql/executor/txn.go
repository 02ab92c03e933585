package executor

import (
	"context"
	"errors"
	"fmt"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/tablecodec"
)

// TxnSource hands a statement the transaction it runs in. The session
// implements it: inside an explicit transaction it returns that one; for an
// autocommit statement it begins one on first use and commits it after the
// statement.
type TxnSource interface {
	// Txn returns the statement's transaction. pointRead says the statement
	// reads exactly one key and writes nothing; an autocommit statement may
	// then read the newest committed version without a start_ts.
	Txn(ctx context.Context, pointRead bool) (kv.Txn, error)
	// TxnOptions are the options of the statement's transaction (of the one
	// Txn would begin when none is open).
	TxnOptions() kv.TxnOptions
	// LockWaitTimeoutMs is innodb_lock_wait_timeout in milliseconds.
	LockWaitTimeoutMs() int64
	// NoteWrite records that the transaction writes rows of tbl, so that a
	// duplicate key found only at commit can be reported with its table.
	NoteWrite(tbl *model.TableInfo)
	// NoteRows counts rows the statement added (net) and modified in tbl;
	// they count towards auto-analyze if the statement and its transaction
	// commit.
	NoteRows(tbl *model.TableInfo, added, modified int64)
}

// keyEnd is the smallest key greater than key: [key, keyEnd(key)) holds
// key alone.
func keyEnd(key []byte) []byte {
	return append(append(make([]byte, 0, len(key)+1), key...), 0)
}

// lockKeys takes pessimistic locks on keys (a no-op apart from marking them
// in optimistic mode) and, when pessimistic, returns each key's latest
// value: the newest committed one, or the transaction's own write when it
// has one. nil means absent.
func (e *Executor) lockKeys(ctx context.Context, tx TxnSource, txn kv.Txn, nowait bool, keys [][]byte) ([][]byte, bool, error) {
	pess := tx.TxnOptions().Pessimistic
	if len(keys) == 0 {
		return nil, pess, nil
	}
	opts := kv.LockOptions{NoWait: nowait, WaitTimeoutMs: tx.LockWaitTimeoutMs(), ReturnValues: pess}
	vals, err := txn.LockKeys(ctx, opts, keys...)
	if err != nil || !opts.ReturnValues {
		return nil, pess, err
	}
	if len(vals) != len(keys) {
		return nil, pess, fmt.Errorf("executor: LockKeys returned %d values for %d keys", len(vals), len(keys))
	}
	for i, k := range keys {
		if txn.Dirty(k, keyEnd(k)) {
			v, found, err := txn.Get(ctx, k)
			if err != nil {
				return nil, pess, err
			}
			if !found {
				v = nil
			}
			vals[i] = v
		}
	}
	return vals, pess, nil
}

// readDirect reports whether reads of [start, end) must go through the
// transaction instead of the coprocessor: the transaction has its own
// writes there, or it reads a fresh snapshot per statement (READ
// COMMITTED), which only the Txn knows.
func readDirect(tx TxnSource, txn kv.Txn, start, end []byte) bool {
	return tx.TxnOptions().Isolation == kv.ReadCommitted || txn.Dirty(start, end)
}

// countRows counts the rows of a table as the transaction sees them.
func (e *Executor) countRows(ctx context.Context, tx TxnSource, txn kv.Txn, tableID int64) (int64, error) {
	start, end := tablecodec.RecordRange(tableID)
	if readDirect(tx, txn, start, end) {
		pairs, err := txn.Scan(ctx, start, end, 0, false)
		return int64(len(pairs)), err
	}
	dag := &coprocessorpb.DAGRequest{Executors: []*coprocessorpb.Executor{
		{Tp: coprocessorpb.ExecType_TypeTableScan, TblScan: &coprocessorpb.TableScan{TableId: tableID}},
		{Tp: coprocessorpb.ExecType_TypeAggregation, Aggregation: &coprocessorpb.Aggregation{AggFunc: []coprocessorpb.AggFuncType{coprocessorpb.AggFuncType_Count}}},
	}}
	resps, err := e.dom.Store().Coprocessor(ctx, dag, []*kvrpcpb.KeyRange{{Start: start, End: end}}, txn.StartTS())
	if err != nil {
		return 0, err
	}
	var n int64
	for _, r := range resps {
		if len(r.AggValues) != 1 {
			return 0, errors.New("executor: coprocessor COUNT returned no partial result")
		}
		n += r.AggValues[0]
	}
	return n, nil
}
