package ddl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stratadb/strata/failpoint"
	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/errno"
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
	index := func(key []byte, row []types.Datum, _ int64) ([]reorgEntry, error, error) {
		k, v, u := table.IndexEntry(nil, t, ix, row, tablecodec.HandleOfDatum(row[len(t.Columns)]))
		return []reorgEntry{{k, v, u}}, nil, nil
	}
	if err := d.reorgRows(ctx, j, t, ix.Name, index); err != nil {
		return err
	}
	return d.setIndexState(ctx, j, model.StatePublic, false, func() { j.State, j.SchemaState = StateDone, SchemaPublic })
}

// reorgEntry is a key a backfill writes; unique: an index entry that must
// not exist with another value.
type reorgEntry struct {
	key, val []byte
	unique   bool
}

// rowReorg is a backfill's work on one row (decoded through the table the
// backfill got, in its layout; n is its 1-based number in the scan): the
// keys to write, and a warning for the statement (kept in the job, up to
// maxJobWarnings). An error from it that is a MySQL error ends the job.
type rowReorg func(key []byte, row []types.Datum, n int64) (es []reorgEntry, warn, err error)

// reorgRows runs a backfill (ADD INDEX, MODIFY COLUMN's row rewrite) over
// t's rows from j's checkpoint to the end: one batch of up to
// BackfillBatch rows per transaction, each writing what fn returns for its
// rows, the new checkpoint and the owner fence. A batch that conflicts
// with DML is retried smaller; a new owner resumes from the last
// committed batch. what names the object for the logs.
func (d *DDL) reorgRows(ctx context.Context, j *Job, t *model.TableInfo, what string, fn rowReorg) error {
	if j.RowCount > 0 {
		d.log.Info(string(j.Type)+": backfill resumes from its checkpoint", "job", j.ID, "table", t.Name, "object", what, "rows_done", j.RowCount)
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
			err = d.backfillBatch(ctx, t, j, end, size, fn)
			if err == nil || try >= backfillTries || !retryableBackfill(err) {
				break
			}
			// Rows of the batch changed under it: retry a smaller batch,
			// which a busy table leaves alone more often.
			size = max(size/2, 1)
			d.log.Debug(string(j.Type)+": batch retried", "job", j.ID, "batch", size, "err", err)
		}
		if err != nil {
			return err
		}
		size = min(size*2, BackfillBatch)
	}
	took := time.Since(begin)
	backfillSeconds.WithLabelValues(string(j.Type)).Observe(took.Seconds())
	d.log.Info(string(j.Type)+": backfill done", "job", j.ID, "table", t.Name, "object", what, "rows", j.RowCount, "took", took)
	return nil
}

func retryableBackfill(err error) bool {
	var wc *kv.WriteConflictError
	var ke *kv.KeyExistsError
	var dl *kv.DeadlockError
	return errors.As(err, &wc) || errors.As(err, &ke) || errors.As(err, &dl) || errors.Is(err, kv.ErrLockWaitTimeout)
}

// backfillBatch writes fn's keys for up to size rows from j.ReorgKey in
// one optimistic transaction (one scan, one BatchGet of the unique keys,
// one commit) that also moves the checkpoint (j.ReorgKey, nil at the end,
// and RowCount) and renews the owner lease. It checks the job is still
// running at its snapshot (errJobChanged: cancelled), and writes the
// job's key, so a cancel committed meanwhile makes it conflict.
func (d *DDL) backfillBatch(ctx context.Context, t *model.TableInfo, j *Job, end []byte, size int, fn rowReorg) error {
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
	next := *j
	var entries []reorgEntry
	rowKeys := make([][]byte, len(pairs))
	var uniqueKeys [][]byte
	row := make([]types.Datum, t.RowWidth())
	for i, kv := range pairs {
		if err := t.DecodeRow(kv.Key, kv.Value, row); err != nil {
			return fmt.Errorf("%s: decode row of %s: %w", j.Type, t.Name, err)
		}
		es, warn, err := fn(kv.Key, row, j.RowCount+int64(i)+1)
		if err != nil {
			return err
		}
		if warn != nil && len(next.Warnings) < maxJobWarnings {
			e := errno.FromError(warn)
			next.Warnings = append(next.Warnings, JobWarning{Code: e.Code, Msg: e.Msg})
		}
		for _, e := range es {
			if e.unique {
				uniqueKeys = append(uniqueKeys, e.key)
			}
		}
		entries = append(entries, es...)
		rowKeys[i] = kv.Key
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
	backfillRows.WithLabelValues(string(j.Type)).Add(float64(len(pairs)))
	backfillBatchSeconds.WithLabelValues(string(j.Type)).Observe(time.Since(began).Seconds())
	return nil
}
