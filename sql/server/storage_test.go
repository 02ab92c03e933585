package server_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kvclient"
	"github.com/stratadb/strata/kvclient/txn"
	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/raftstore"
	"github.com/stratadb/strata/sql/catalog"
	"github.com/stratadb/strata/sql/tablecodec"
	storeserver "github.com/stratadb/strata/store/server"
	"github.com/stratadb/strata/store/storetest"
)

// The SQL node's tests run over the production client stack (kvclient/txn
// over kvclient, gRPC on loopback) and a real store's transaction layer
// and coprocessor (store/storetest).

// testStoreOptions: two store nodes, so that clients batch per store and
// index lookups leave the rows of the other node's regions to the SQL
// node; regions of three keys, so that transactions span regions and
// scans merge many regions' answers; time-bounded pages of two rows, so
// that the SQL node merges several pages per region; the catalog's keys
// and the tables' in regions of their own from the start, so that both
// nodes lead some.
var testStoreOptions = storetest.Options{Stores: 2, RegionKeys: 3, PageScanRows: 2,
	SplitKeys: [][]byte{{tablecodec.MetaPrefix}, {tablecodec.TablePrefix}}}

// nodeStorage is one SQL node's kv.Storage over a test store: its own KV
// client and transaction client, as every SQL node has.
type nodeStorage struct {
	*txn.Storage
	st *storetest.Store
}

// newTestStore starts a store for t and returns the first SQL node's
// storage over it.
func newTestStore(t testing.TB) *nodeStorage {
	t.Helper()
	st, err := storetest.New(testStoreOptions)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	return newNodeStorage(t, st, kvclient.Config{})
}

// newNodeStorage returns another SQL node's storage over st.
func newNodeStorage(t testing.TB, st *storetest.Store, cfg kvclient.Config) *nodeStorage {
	t.Helper()
	kvc := kvclient.New(st, cfg)
	t.Cleanup(func() { _ = kvc.Close() })
	tc := txn.NewClient(kvc, st, txn.Config{})
	ns := &nodeStorage{Storage: txn.NewStorage(st, kvc, tc), st: st}
	ns.connect(t)
	return ns
}

// connect opens the client's connections to every store node (a read in a
// region each leads): tests that count goroutines start from a baseline
// with the connections (and the store's stream workers) in place.
func (ns *nodeStorage) connect(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	now, err := ns.GetTS(ctx)
	require.NoError(t, err)
	seen := map[uint64]bool{}
	for _, r := range ns.st.Engine().Regions() {
		if l := ns.st.Engine().Leader(r).GetStoreId(); !seen[l] {
			seen[l] = true
			_, _, err := kv.GetAt(ctx, ns, r.GetStartKey(), now)
			require.NoError(t, err)
		}
	}
}

// newNode returns the storage of another SQL node over the same store.
func (ns *nodeStorage) newNode(t testing.TB) *nodeStorage {
	return newNodeStorage(t, ns.st, kvclient.Config{})
}

// tableID is the id of table db.name.
func (ns *nodeStorage) tableID(t testing.TB, db, name string) int64 {
	t.Helper()
	ctx := context.Background()
	cat := catalog.New(ns)
	d, err := cat.GetDB(ctx, db)
	require.NoError(t, err)
	tbl, err := cat.GetTable(ctx, d, name)
	require.NoError(t, err)
	return tbl.ID
}

// touchesTable matches write requests (prewrite, commit, pessimistic lock)
// with a key of table id: what the SQL node's statements on it send, not
// the catalog's or the statistics' own writes running in the background.
func touchesTable(id int64) func(proto.Message) bool {
	prefix := tablecodec.AppendTablePrefix(nil, id)
	return func(req proto.Message) bool {
		var keys [][]byte
		switch r := req.(type) {
		case *kvrpcpb.PrewriteRequest:
			for _, m := range r.GetMutations() {
				keys = append(keys, m.GetKey())
			}
		case *kvrpcpb.PessimisticLockRequest:
			for _, m := range r.GetMutations() {
				keys = append(keys, m.GetKey())
			}
		case *kvrpcpb.CommitRequest:
			keys = r.GetKeys()
		case *kvrpcpb.GetRequest:
			keys = [][]byte{r.GetKey()}
		case *kvrpcpb.BatchGetRequest:
			keys = r.GetKeys()
		}
		for _, k := range keys {
			if bytes.HasPrefix(k, prefix) {
				return true
			}
		}
		return false
	}
}

// conflictAnswer answers a prewrite with the write conflict a store
// reports when the key was committed after the transaction's start_ts.
func conflictAnswer(req proto.Message) (proto.Message, error) {
	r := req.(*kvrpcpb.PrewriteRequest)
	key := r.GetMutations()[0].GetKey()
	return &kvrpcpb.PrewriteResponse{Errors: []*kvrpcpb.KeyError{{Conflict: &kvrpcpb.WriteConflict{
		StartTs: r.GetStartVersion(), ConflictTs: r.GetStartVersion() + 1, ConflictCommitTs: r.GetStartVersion() + 2,
		Key: key, Primary: r.GetPrimaryLock()}}}}, nil
}

// busyAnswer answers with the region error of a store too busy to serve.
func busyAnswer(proto.Message) (proto.Message, error) {
	return &kvrpcpb.PrewriteResponse{RegionError: &errorpb.Error{Message: "server is busy: test",
		ServerIsBusy: &errorpb.ServerIsBusy{Reason: "test"}}}, nil
}

// lostAnswer is what a store node answers to a write whose outcome it does
// not know (proposed to raft, then the leader stepped down):
// codes.Unknown (on a BatchCommands stream, as the response's error_code),
// which the client takes for an answer lost after the request was sent.
func lostAnswer(proto.Message) (proto.Message, error) {
	return nil, storeserver.GRPCError(raftstore.ErrUndetermined)
}
