package deleterange

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kv/codec"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/sql/catalog"
	"github.com/stratadb/strata/sql/tablecodec"
)

// Range is one key range a finished DDL job left to delete.
type Range struct {
	JobID     int64 `json:"job_id"`
	ElementID int64 `json:"element_id"`
	// What names the dropped object for people: "table 42", "index 3 of
	// table 42".
	What     string `json:"what"`
	StartKey []byte `json:"start_key"`
	EndKey   []byte `json:"end_key"`
	// TS is the start timestamp of the transaction that recorded the range
	// (the job's last step); the range is deleted once the GC safe point
	// passed that transaction's commit (see the package doc).
	TS uint64 `json:"ts"`
	// DoneMs is when the range was deleted (PD's clock, ms); 0 while
	// pending.
	DoneMs int64 `json:"done_ms,omitempty"`
}

// Table is the range of every key of table id (rows and indexes).
func Table(jobID, tableID int64) Range {
	start, end := tablecodec.TableRange(tableID)
	return Range{JobID: jobID, ElementID: tableID, What: fmt.Sprintf("table %d", tableID), StartKey: start, EndKey: end}
}

// Index is the range of every entry of index indexID of table tableID.
func Index(jobID, tableID, indexID int64) Range {
	start, end := tablecodec.IndexRange(tableID, indexID)
	return Range{JobID: jobID, ElementID: indexID, What: fmt.Sprintf("index %d of table %d", indexID, tableID), StartKey: start, EndKey: end}
}

func pendingPrefix() []byte { return catalog.MetaKey("GCDeleteRange") }
func donePrefix() []byte    { return catalog.MetaKey("GCDeleteRangeDone") }

func rangeKey(prefix []byte, r Range) []byte {
	return codec.EncodeInt(codec.EncodeInt(prefix, r.JobID), r.ElementID)
}

func encode(r Range) []byte {
	v, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("deleterange: encode %+v: %v", r, err)) // only plain data
	}
	return v
}

func decode(v []byte) (Range, error) {
	var r Range
	if err := json.Unmarshal(v, &r); err != nil {
		return r, fmt.Errorf("deleterange: corrupt range record: %w", err)
	}
	return r, nil
}

// Mutations record rs as pending with TS = start, the start timestamp of
// the transaction they join (the one that finishes the DDL job).
func Mutations(rs []Range, start uint64) []*kvrpcpb.Mutation {
	out := make([]*kvrpcpb.Mutation, 0, len(rs))
	for _, r := range rs {
		r.TS = start
		out = append(out, &kvrpcpb.Mutation{Op: kvrpcpb.Op_Put, Key: rangeKey(pendingPrefix(), r), Value: encode(r)})
	}
	return out
}

// Pending returns the ranges pending at ts, in job order, at most limit
// (0: all).
func Pending(ctx context.Context, s kv.Storage, ts uint64, limit int) ([]Range, error) {
	return scan(ctx, s, pendingPrefix(), ts, limit)
}

// Done returns the ranges deleted by ts, in job order, at most limit (0:
// all).
func Done(ctx context.Context, s kv.Storage, ts uint64, limit int) ([]Range, error) {
	return scan(ctx, s, donePrefix(), ts, limit)
}

func scan(ctx context.Context, s kv.Storage, prefix []byte, ts uint64, limit int) ([]Range, error) {
	pairs, err := kv.ScanAt(ctx, s, prefix, tablecodec.PrefixNext(prefix), ts, limit)
	if err != nil {
		return nil, fmt.Errorf("deleterange: scan: %w", err)
	}
	out := make([]Range, 0, len(pairs))
	for _, p := range pairs {
		r, err := decode(p.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// MarkDone moves r from pending to done in one transaction. A range no
// longer pending (another GC leader finished it) is left alone.
func MarkDone(ctx context.Context, s kv.Storage, r Range, doneMs int64) error {
	return kv.Update(ctx, s, func(t kv.Txn) error {
		pk := rangeKey(pendingPrefix(), r)
		if _, found, err := t.Get(ctx, pk); err != nil || !found {
			return err
		}
		r.DoneMs = doneMs
		if err := t.Delete(pk); err != nil {
			return err
		}
		return t.Set(rangeKey(donePrefix(), r), encode(r))
	})
}
