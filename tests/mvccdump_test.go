package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/stratadb/strata/kv/codec"
	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/localcluster"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
	"github.com/stratadb/strata/store/mvcc"
)

// openStoreEngine opens stopped store p's engine read-only (nil, logged,
// if it cannot) and returns it with its directory.
func openStoreEngine(t *testing.T, p *localcluster.Proc) (*pebble.DB, string) {
	dir := p.Flag("--data-dir")
	db, err := pebble.Open(dir, &pebble.Options{ReadOnly: true, Comparer: keys.Comparer})
	if err != nil {
		t.Logf("open the engine of %s: %v", p.Name, err)
		return nil, dir
	}
	return db, dir
}

// dumpMVCC is a failure diagnostic: it kills every store and logs the LOCK
// and WRITE records of every row key on each store's engine, with the
// second column decoded as an integer (the bank tables' balance), so that
// a broken invariant can be traced to the transactions that wrote it. The
// stores are started again afterwards.
func dumpMVCC(t *testing.T, c *localcluster.Cluster) {
	for _, p := range c.Stores {
		_ = p.Kill()
	}
	for _, p := range c.Stores {
		db, dir := openStoreEngine(t, p)
		if db == nil {
			continue
		}
		it, _ := db.NewIter(&pebble.IterOptions{LowerBound: []byte{'l'}, UpperBound: []byte{'x'}})
		var sb strings.Builder
		rd := tablecodec.NewRowDecoder([]int64{1, 2})
		out := make([]types.Datum, 2)
		for it.First(); it.Valid(); it.Next() {
			k := it.Key()
			switch k[0] {
			case 'l':
				_, uk, err := codec.DecodeBytes(k[1:], nil)
				if err != nil {
					continue
				}
				tid, h, err := tablecodec.DecodeRowKey(uk)
				if err != nil {
					continue
				}
				l, _ := mvcc.DecodeLock(it.Value())
				bal := "-"
				if l.HasShortValue && rd.Decode(l.ShortValue, out) == nil {
					bal = out[1].String()
				}
				fmt.Fprintf(&sb, "LOCK  t%d h%d type=%v start=%d fu=%d min=%d async=%v primary=%x secondaries=%x ttl=%d bal=%s\n", tid, h, l.Type, l.StartTS, l.ForUpdateTS, l.MinCommitTS, l.UseAsyncCommit, l.Primary, l.Secondaries, l.TTL, bal)
			case 'w':
				uk, ts, err := keys.DecodeVersioned(k[1:], nil)
				if err != nil {
					continue
				}
				tid, h, err := tablecodec.DecodeRowKey(uk)
				if err != nil {
					continue
				}
				w, _ := mvcc.DecodeWrite(it.Value())
				bal := "-"
				if w.HasShortValue && rd.Decode(w.ShortValue, out) == nil {
					bal = out[1].String()
				}
				fmt.Fprintf(&sb, "WRITE t%d h%d commit=%d start=%d kind=%v bal=%s rb=%v\n", tid, h, ts, w.StartTS, w.Kind, bal, w.OverlappedRollback)
			}
		}
		_ = it.Close()
		_ = db.Close()
		t.Logf("MVCC of %s (%s):\n%s", p.Name, dir, sb.String())
	}
	for _, p := range c.Stores {
		if err := p.Start(); err != nil {
			t.Logf("restart %s: %v", p.Name, err)
		}
	}
}
