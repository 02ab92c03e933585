package tests

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/localcluster"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/raftstore/replicacheck"
)

// dumpReplicaDiff is a failure diagnostic for a consistency mismatch: it
// kills every store, copies the cluster's logs and data to
// $STRATA_KEEP_DIR (if set), and logs, for each mismatched region, every
// store's local state and apply state of it and the engine keys (every
// key space) of the region's range on which the stores differ.
func dumpReplicaDiff(t *testing.T, c *localcluster.Cluster, ms []replicacheck.Mismatch) {
	for _, p := range c.Stores {
		_ = p.Kill()
	}
	if keep := os.Getenv("STRATA_KEEP_DIR"); keep != "" {
		dir := filepath.Dir(c.Stores[0].Flag("--data-dir"))
		out := filepath.Join(keep, fmt.Sprintf("%s-%d", t.Name(), os.Getpid()))
		if err := exec.Command("cp", "-a", dir, out).Run(); err != nil {
			t.Logf("keep %s: %v", dir, err)
		} else {
			t.Logf("cluster dir kept in %s", out)
		}
	}
	type replica struct {
		name string
		kv   map[string][]byte
	}
	for _, m := range ms {
		var reps []replica
		var region *metapb.Region
		for _, p := range c.Stores {
			db, _ := openStoreEngine(t, p)
			if db == nil {
				continue
			}
			sk := binary.BigEndian.AppendUint64([]byte{0x01, 0x02}, m.RegionID)
			v, cl, err := db.Get(sk)
			if err != nil {
				t.Logf("region %d on %s: state: %v", m.RegionID, p.Name, err)
				_ = db.Close()
				continue
			}
			r := &metapb.Region{}
			_ = proto.Unmarshal(v[1:], r)
			st := v[0]
			cl.Close()
			as := "?"
			if v, cl, err := db.Get(binary.BigEndian.AppendUint64([]byte{0x03}, m.RegionID)); err == nil {
				as = fmt.Sprintf("applied %d truncated %d/%d", binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:]), binary.BigEndian.Uint64(v[16:]))
				cl.Close()
			}
			t.Logf("region %d on %s: peer state %d, region %v, %s", m.RegionID, p.Name, st, r, as)
			if region == nil { // every replica is dumped over the first store's range
				region = r
			}
			kv := map[string][]byte{}
			for _, cf := range keys.CFs {
				lo, hi := keys.CFBounds(cf, region.GetStartKey(), region.GetEndKey())
				it, _ := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
				for it.First(); it.Valid(); it.Next() {
					kv[string(it.Key())] = bytes.Clone(it.Value())
				}
				_ = it.Close()
			}
			_ = db.Close()
			reps = append(reps, replica{name: p.Name, kv: kv})
		}
		var sb strings.Builder
		all := map[string]bool{}
		for _, r := range reps {
			for k := range r.kv {
				all[k] = true
			}
		}
		for k := range all {
			var vs []string
			same := true
			for i, r := range reps {
				v, ok := r.kv[k]
				if !ok {
					vs = append(vs, r.name+":absent")
				} else {
					vs = append(vs, fmt.Sprintf("%s:%x", r.name, v))
				}
				if i > 0 {
					v0, ok0 := reps[0].kv[k]
					if ok != ok0 || !bytes.Equal(v, v0) {
						same = false
					}
				}
			}
			if !same {
				fmt.Fprintf(&sb, "  key %x: %s\n", k, strings.Join(vs, " "))
			}
		}
		for _, r := range reps {
			fmt.Fprintf(&sb, "  %s: %d keys\n", r.name, len(r.kv))
		}
		t.Logf("mismatch %+v; keys that differ in region %d's range %v:\n%s", m, m.RegionID, region, sb.String())
	}
}
