package ddl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stratadb/strata/failpoint"
	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/table"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

const (
	// BackfillBatch is how many rows one backfill transaction indexes.
	BackfillBatch = 256
	backfillTries = 50
)

// backfill indexes the table's rows from the job's checkpoint (ReorgKey),
// one batch per transaction, each of which also writes the new checkpoint
// and the owner fence; a new owner resumes from the last committed batch.
// When the last row is indexed the index becomes public and the job done.
//
// The index is write only, so rows written after a batch's snapshot get
// their entries from DML; a batch whose rows change after its snapshot
// fails its commit with a write conflict on the row keys (they are locked
// in the batch, i.e. checked at prewrite) and is retried on a new
// snapshot, so it never writes an entry for a row value that no longer
// exists.
func (d *DDL) backfill(ctx context.Context, j *Job) error {
	t, _, err := d.table(ctx, j)
	if err != nil {
		return err
	}
	ix := t.IndexByID(j.Index.ID)
	if ix == nil || !ix.Writable() {
		return fmt.Errorf("ddl: %v: index %d is not write only before its backfill", j, j.Index.ID)
	}
	if j.RowCount > 0 {
		d.log.Info("add index: backfill resumes from its checkpoint", "job", j.ID, "table", t.Name, "index", ix.Name, "rows_done", j.RowCount)
	}
	_, end := tablecodec.RecordRange(t.ID)
	size := BackfillBatch
	begin := time.Now()
	for j.ReorgKey != nil {
		if j.RowCount > 0 {
			failpoint.Hit("ddl-backfill-batch") // a batch committed, more to go
		}
		var err error
		for try := 0; ; try++ {
			err = d.backfillBatch(ctx, t, ix, j, end, size)
			if err == nil || try >= backfillTries || !retryableBackfill(err) {
				break
			}
			// Rows of the batch changed under it: retry a smaller batch,
			// which a busy table leaves alone more often.
			size = max(size/2, 1)
			d.log.Debug("add index: batch retried", "job", j.ID, "batch", size, "err", err)
		}
		if err != nil {
			return err
		}
		size = min(size*2, BackfillBatch)
	}
	d.log.Info("add index: backfill done", "job", j.ID, "table", t.Name, "index", ix.Name, "rows", j.RowCount, "took", time.Since(begin))
	return d.setIndexState(ctx, j, model.StatePublic, false, func() { j.State, j.SchemaState = StateDone, SchemaPublic })
}

func retryableBackfill(err error) bool {
	var wc *kv.WriteConflictError
	var ke *kv.KeyExistsError
	var dl *kv.DeadlockError
	return errors.As(err, &wc) || errors.As(err, &ke) || errors.As(err, &dl) || errors.Is(err, kv.ErrLockWaitTimeout)
}

// backfillBatch indexes up to size rows from j.ReorgKey in one optimistic
// transaction (one scan, one BatchGet of the unique keys, one commit) that
// also moves the checkpoint (j.ReorgKey, nil at the end, and RowCount) and
// renews the owner lease. It checks the job is still running at its
// snapshot (errJobChanged: cancelled), and writes the job's key, so a
// cancel committed meanwhile makes it conflict.
func (d *DDL) backfillBatch(ctx context.Context, t *model.TableInfo, ix *model.IndexInfo, j *Job, end []byte, size int) error {
	began := time.Now()
	txn, err := d.store.Begin(ctx, kv.TxnOptions{})
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			_ = txn.Rollback(context.WithoutCancel(ctx))
		}
	}()
	cur, found, err := txn.Get(ctx, queueKey(j.ID))
	if err != nil {
		return err
	}
	if !found {
		return errJobChanged
	}
	if cj, err := decodeJob(cur); err != nil {
		return err
	} else if cj.State != StateRunning || !bytes.Equal(cj.ReorgKey, j.ReorgKey) {
		return errJobChanged
	}
	f, err := d.fence(ctx, txn.StartTS())
	if err != nil {
		return err
	}
	pairs, err := txn.Scan(ctx, j.ReorgKey, end, size, false)
	if err != nil {
		return err
	}
	type entry struct {
		key, val []byte
		unique   bool
	}
	entries := make([]entry, len(pairs))
	rowKeys := make([][]byte, len(pairs))
	var uniqueKeys [][]byte
	row := make([]types.Datum, t.RowWidth())
	for i, kv := range pairs {
		if err := t.DecodeRow(kv.Key, kv.Value, row); err != nil {
			return fmt.Errorf("add index: decode row of %s: %w", t.Name, err)
		}
		k, v, u := table.IndexEntry(nil, t, ix, row, row[len(t.Columns)].Int64())
		entries[i] = entry{k, v, u}
		rowKeys[i] = kv.Key
		if u {
			uniqueKeys = append(uniqueKeys, k)
		}
	}
	var have map[string][]byte
	if len(uniqueKeys) > 0 {
		if have, err = txn.BatchGet(ctx, uniqueKeys); err != nil {
			return err
		}
	}
	// Optimistic LockKeys only marks the row keys: the commit fails if any
	// of them changed after this snapshot.
	if len(rowKeys) > 0 {
		if _, err := txn.LockKeys(ctx, kv.LockOptions{}, rowKeys...); err != nil {
			return err
		}
	}
	for _, e := range entries {
		if !e.unique {
			if err := txn.Set(e.key, e.val); err != nil {
				return err
			}
			continue
		}
		if old, found := have[string(e.key)]; found {
			if bytes.Equal(old, e.val) {
				continue // written by DML since the index became write-only
			}
			return table.DupKeyError(t, e.key)
		}
		if err := txn.Insert(e.key, e.val); err != nil {
			return table.DupKeyError(t, e.key)
		}
	}
	next := *j
	next.RowCount += int64(len(pairs))
	next.ReorgKey = nil
	if len(pairs) == size {
		last := pairs[len(pairs)-1].Key
		next.ReorgKey = append(append(make([]byte, 0, len(last)+1), last...), 0)
	}
	if err := txn.Set(f.Key, f.Value); err != nil {
		return err
	}
	if err := txn.Set(queueKey(j.ID), encodeJob(&next)); err != nil {
		return err
	}
	// A *kv.KeyExistsError or write conflict from Commit is retried by the
	// caller: a concurrent change, or a real duplicate the next try reports.
	if err := txn.Commit(ctx); err != nil {
		return err
	}
	committed = true
	*j = next
	backfillRows.Add(float64(len(pairs)))
	backfillBatchSeconds.Observe(time.Since(began).Seconds())
	return nil
}
