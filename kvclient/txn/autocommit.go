package txn

import (
	"context"
	"fmt"
	"time"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kvclient/txn/memdb"
	"github.com/stratadb/strata/proto/kvrpcpb"
)

// CommitMutations commits muts as one optimistic transaction that read at
// startTS (an autocommit statement): 1PC when they lie in one region, else
// async commit or 2PC per opts; the commit_ts is chosen by the protocol.
// Errors as Txn.Commit: *kv.KeyExistsError, *kv.WriteConflictError (a key
// written after startTS), kv.ErrUndetermined, kv.ErrRegionUnavailable.
// muts is not retained or modified.
func (c *Client) CommitMutations(ctx context.Context, muts []*kvrpcpb.Mutation, startTS uint64, opts kv.TxnOptions) error {
	opts.ReadOnly, opts.StartTS, opts.Pessimistic = false, 0, false
	t := &Txn{c: c, opts: opts, startTS: startTS, forUpdateTS: startTS, readTS: startTS, mem: memdb.New(), stmtCP: -1, began: time.Now()}
	c.active.add(startTS)
	for _, m := range muts {
		var err error
		switch m.Op {
		case kvrpcpb.Op_Put:
			err = t.Set(m.Key, m.Value)
		case kvrpcpb.Op_Del:
			err = t.Delete(m.Key)
		case kvrpcpb.Op_Insert:
			err = t.Insert(m.Key, m.Value)
		case kvrpcpb.Op_Lock:
			t.mem.Lock(m.Key, 0)
		default:
			err = fmt.Errorf("kvclient/txn: unsupported mutation op %v", m.Op)
		}
		if err != nil {
			return err
		}
	}
	return t.Commit(ctx)
}
