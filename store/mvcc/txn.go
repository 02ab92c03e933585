package mvcc

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/proto/raft_cmdpb"
)

// Txn collects the writes of one command as raft_cmdpb requests: what a
// raft entry carries and apply writes, with keys inside their key space
// (kv/keys adds the prefix). It is not safe for concurrent use. The byte
// slices passed in are retained until the writes are applied.
type Txn struct {
	writes []*raft_cmdpb.Request
}

// Writes returns the collected writes; the Txn keeps no reference after
// Reset.
func (t *Txn) Writes() []*raft_cmdpb.Request { return t.writes }

// Len is the number of collected writes.
func (t *Txn) Len() int { return len(t.writes) }

// Reset drops the collected writes.
func (t *Txn) Reset() { t.writes = nil }

// Retain keeps, in order, the writes keep returns true for.
func (t *Txn) Retain(keep func(*raft_cmdpb.Request) bool) {
	kept := t.writes[:0]
	for _, w := range t.writes {
		if keep(w) {
			kept = append(kept, w)
		}
	}
	clear(t.writes[len(kept):])
	t.writes = kept
}

// Truncate drops the writes after the first n (undoes a failed key).
func (t *Txn) Truncate(n int) { t.writes = t.writes[:n] }

func (t *Txn) put(cf raft_cmdpb.CF, key, value []byte) {
	t.writes = append(t.writes, &raft_cmdpb.Request{CmdType: raft_cmdpb.CmdType_Put, Cf: cf, Key: key, Value: value})
}

func (t *Txn) del(cf raft_cmdpb.CF, key []byte) {
	t.writes = append(t.writes, &raft_cmdpb.Request{CmdType: raft_cmdpb.CmdType_Delete, Cf: cf, Key: key})
}

// PutLock writes key's lock.
func (t *Txn) PutLock(key []byte, l *Lock) {
	t.put(raft_cmdpb.CF_LOCK, keys.Encode(nil, key), l.Encode(nil))
}

// UnlockKey deletes key's lock.
func (t *Txn) UnlockKey(key []byte) { t.del(raft_cmdpb.CF_LOCK, keys.Encode(nil, key)) }

// PutValue writes the long value of key written by the txn startTS.
func (t *Txn) PutValue(key []byte, startTS uint64, value []byte) {
	t.put(raft_cmdpb.CF_DEFAULT, keys.EncodeVersioned(nil, key, startTS), value)
}

// DeleteValue deletes the long value of key written by the txn startTS.
func (t *Txn) DeleteValue(key []byte, startTS uint64) {
	t.del(raft_cmdpb.CF_DEFAULT, keys.EncodeVersioned(nil, key, startTS))
}

// PutWrite writes key's write record at commitTS.
func (t *Txn) PutWrite(key []byte, commitTS uint64, w *Write) {
	t.put(raft_cmdpb.CF_WRITE, keys.EncodeVersioned(nil, key, commitTS), w.Encode(nil))
}

// DeleteWrite deletes key's write record at commitTS (GC).
func (t *Txn) DeleteWrite(key []byte, commitTS uint64) {
	t.del(raft_cmdpb.CF_WRITE, keys.EncodeVersioned(nil, key, commitTS))
}

// ApplyWrites adds reqs to b as apply does (prefixing each key with its
// key space). Tests and tools that run without raft use it.
func ApplyWrites(b *pebble.Batch, reqs []*raft_cmdpb.Request) error {
	for _, r := range reqs {
		var err error
		switch r.GetCmdType() {
		case raft_cmdpb.CmdType_Put:
			err = b.Set(keys.EngineKey(nil, r.GetCf(), r.GetKey()), r.GetValue(), nil)
		case raft_cmdpb.CmdType_Delete:
			err = b.Delete(keys.EngineKey(nil, r.GetCf(), r.GetKey()), nil)
		case raft_cmdpb.CmdType_DeleteRange:
			err = b.DeleteRange(keys.EngineKey(nil, r.GetCf(), r.GetKey()), keys.EngineKey(nil, r.GetCf(), r.GetEndKey()), nil)
		default:
			err = fmt.Errorf("mvcc: apply: unknown command type %v", r.GetCmdType())
		}
		if err != nil {
			return err
		}
	}
	return nil
}
