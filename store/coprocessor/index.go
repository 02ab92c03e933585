package coprocessor

import (
	"bytes"
	"fmt"

	"github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/sql/tablecodec"
)

// RowReader reads the rows an IndexLookUp needs, on the store that ran the
// index scan. LookUp is given a batch of row keys; for each key it can
// serve (this store leads the key's region and may read it at the
// request's timestamp) it sets local[i] and vals[i] (the stored row, owned
// by the caller afterwards; nil when no row exists). Keys it leaves
// non-local go back to the SQL node. A lock met on a local key is returned
// as the error (*mvcc.KeyError), as a scan returns it.
type RowReader interface {
	LookUp(keys, vals [][]byte, local []bool) error
}

// lookupBatch is how many index entries an IndexLookUp collects before it
// reads their rows (one RowReader call: one lease check per row region and
// one snapshot per batch).
const lookupBatch = 512

// lookupRow is an index entry whose row is still to be read.
type lookupRow struct {
	key, rowKey []byte
}

// indexSource validates an IndexScan as the plan's source.
func (p *plan) indexSource(is *coprocessorpb.IndexScan) error {
	if len(is.GetTableInfo()) == 0 {
		return fmt.Errorf("%w: IndexScan without table_info", ErrUnsupported)
	}
	t, err := schemaOf(is.GetTableInfo())
	if err != nil {
		return err
	}
	if t.ID != is.GetTableId() {
		return fmt.Errorf("%w: IndexScan of table %d with the schema of table %d", ErrUnsupported, is.GetTableId(), t.ID)
	}
	ix := t.IndexByID(is.GetIndexId())
	if ix == nil {
		return fmt.Errorf("%w: table %d has no index %d", ErrUnsupported, t.ID, is.GetIndexId())
	}
	p.tbl, p.idx, p.desc = t, ix, is.GetDesc()
	return nil
}

// decodeIndex decodes index entry k/v into x.row: the index's columns at
// their offsets, the handle after the columns (and in the integer primary
// key's slot), NULL elsewhere; x.handle is the entry's handle.
func (x *run) decodeIndex(k, v []byte) error {
	t, ix := x.p.tbl, x.p.idx
	_, _, vals, kh, hasHandle, err := tablecodec.DecodeIndexKey(k, len(ix.Columns), t.CommonHandle)
	if err != nil {
		return fmt.Errorf("coprocessor: decode index entry of table %d: %w", t.ID, err)
	}
	h, err := tablecodec.DecodeIndexHandle(kh, hasHandle, v, t.CommonHandle)
	if err != nil {
		return fmt.Errorf("coprocessor: decode index entry of table %d: %w", t.ID, err)
	}
	h = h.Clone() // a common handle aliases the scan's key or value
	clear(x.row)
	t.SetIndexRow(ix, vals, h, x.row)
	x.handle = h
	return nil
}

// queueLookup adds index entry k's row to the pending batch, reading the
// batch when it is full.
func (x *run) queueLookup(k []byte) error {
	x.pending = append(x.pending, lookupRow{key: bytes.Clone(k), rowKey: tablecodec.AppendHandleRowKey(nil, x.p.tbl.ID, x.handle)})
	if len(x.pending) >= lookupBatch {
		return x.flushLookups()
	}
	return nil
}

// flushLookups reads the pending entries' rows through x.rows and appends
// one output row per entry, in index order: the row when it was read here,
// else a remote marker for the SQL node (also for a row not found here,
// which the SQL node then reports as an inconsistency).
func (x *run) flushLookups() error {
	n := len(x.pending)
	if n == 0 {
		return nil
	}
	keys := x.keysBuf[:0]
	for _, r := range x.pending {
		keys = append(keys, r.rowKey)
	}
	x.keysBuf = keys
	vals := make([][]byte, n)
	local := make([]bool, n)
	if x.rows != nil {
		if err := x.rows.LookUp(keys, vals, local); err != nil {
			return err
		}
	}
	for i, r := range x.pending {
		out := &coprocessorpb.Row{Key: r.key, RowKey: r.rowKey}
		if local[i] && vals[i] != nil {
			out.Value = vals[i]
			x.resp.LocalLookups++
		} else {
			out.Remote = true
			x.resp.RemoteLookups++
		}
		x.resp.Rows = append(x.resp.Rows, out)
	}
	clear(x.pending)
	x.pending = x.pending[:0]
	return nil
}
