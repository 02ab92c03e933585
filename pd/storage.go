package pd

import (
	"context"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
)

// Keys in etcd. Everything Strata keeps lives under rootPath.
const (
	rootPath          = "/strata/"
	keyClusterID      = rootPath + "cluster_id"
	keyBootstrapped   = rootPath + "bootstrapped"
	keyAllocID        = rootPath + "alloc_id"        // decimal: end (exclusive) of the persisted id range
	keyTSOWindow      = rootPath + "tso_window"      // decimal: physical ms upper bound
	prefixStores      = rootPath + "stores/"         // + %020d id -> metapb.Store
	prefixRegions     = rootPath + "regions/"        // + %020d id -> metapb.Region
	prefixMembers     = rootPath + "members/"        // + name -> pdpb.Member
	prefixMemberHTTP  = rootPath + "member_http/"    // + name -> status "host:port" (HTTP API)
	prefixLeader      = rootPath + "leader"          // election prefix
	keyScheduleConfig = rootPath + "schedule_config" // JSON schedule.Config
)

func storeKey(id uint64) string  { return fmt.Sprintf("%s%020d", prefixStores, id) }
func regionKey(id uint64) string { return fmt.Sprintf("%s%020d", prefixRegions, id) }

// fencedKV writes to etcd only while the leader key of one election term is
// still ours: every write is a transaction guarded by fence, so a deposed
// leader cannot overwrite what its successor persisted.
type fencedKV struct {
	cli   *clientv3.Client
	fence clientv3.Cmp
}

// txn applies ops if the fence and the extra comparisons hold. A failed
// fence yields ErrNotLeader; a failed extra comparison yields errTxnCond.
func (kv *fencedKV) txn(ctx context.Context, cmps []clientv3.Cmp, ops ...clientv3.Op) error {
	all := append([]clientv3.Cmp{kv.fence}, cmps...)
	resp, err := kv.cli.Txn(ctx).If(all...).Then(ops...).Commit()
	if err != nil {
		return fmt.Errorf("pd: etcd txn: %w", err)
	}
	if !resp.Succeeded {
		if len(cmps) == 0 {
			return ErrNotLeader
		}
		// Tell the two failures apart.
		r, err := kv.cli.Txn(ctx).If(kv.fence).Commit()
		if err != nil {
			return fmt.Errorf("pd: etcd txn: %w", err)
		}
		if !r.Succeeded {
			return ErrNotLeader
		}
		return errTxnCond
	}
	return nil
}

func (kv *fencedKV) put(ctx context.Context, key, val string) error {
	return kv.txn(ctx, nil, clientv3.OpPut(key, val))
}

func (kv *fencedKV) get(ctx context.Context, key string) (string, bool, error) {
	resp, err := kv.cli.Get(ctx, key)
	if err != nil {
		return "", false, fmt.Errorf("pd: etcd get %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return "", false, nil
	}
	return string(resp.Kvs[0].Value), true, nil
}

func (kv *fencedKV) getUint(ctx context.Context, key string) (uint64, error) {
	v, ok, err := kv.get(ctx, key)
	if err != nil || !ok {
		return 0, err
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("pd: parse %s=%q: %w", key, v, err)
	}
	return n, nil
}

// loadPrefix unmarshals every value under prefix into a new M.
func loadPrefix[M proto.Message](ctx context.Context, cli *clientv3.Client, prefix string, mk func() M) ([]M, error) {
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("pd: etcd get %s: %w", prefix, err)
	}
	out := make([]M, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		m := mk()
		if err := proto.Unmarshal(kv.Value, m); err != nil {
			return nil, fmt.Errorf("pd: decode %s: %w", kv.Key, err)
		}
		out = append(out, m)
	}
	return out, nil
}

func mustMarshal(m proto.Message) string {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("pd: marshal %T: %v", m, err))
	}
	return string(b)
}

// tsoWindowStore persists the TSO window for one leader term.
type tsoWindowStore struct{ kv *fencedKV }

func (w tsoWindowStore) LoadWindow(ctx context.Context) (int64, error) {
	n, err := w.kv.getUint(ctx, keyTSOWindow)
	return int64(n), err
}

func (w tsoWindowStore) SaveWindow(ctx context.Context, bound int64) error {
	return w.kv.put(ctx, keyTSOWindow, strconv.FormatInt(bound, 10))
}
