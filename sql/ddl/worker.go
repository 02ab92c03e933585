package ddl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/sql/catalog"
	"github.com/stratadb/strata/sql/deleterange"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/tso"
)

// head reads the oldest job of the queue (nil when it is empty).
func (d *DDL) head(ctx context.Context) (*Job, error) {
	ts, err := d.store.GetTS(ctx)
	if err != nil {
		return nil, err
	}
	pairs, err := kv.ScanAt(ctx, d.store, queuePrefix(), prefixEnd(queuePrefix()), ts, 1)
	if err != nil || len(pairs) == 0 {
		return nil, err
	}
	return decodeJob(pairs[0].Value)
}

// errJobChanged: the job changed under a step (ADMIN CANCEL): the owner
// reads it again.
var errJobChanged = errors.New("ddl: the job changed during its step")

// runOne takes the next step of the oldest queued job; worked is false when
// the queue is empty. An error is either errNotOwner, or a transient one
// (the step is tried again); errors that end the job are recorded in it.
func (d *DDL) runOne(ctx context.Context) (worked bool, err error) {
	j, err := d.head(ctx)
	if err != nil || j == nil {
		return false, err
	}
	st := nextStep(j)
	if st == stepNone {
		return false, fmt.Errorf("ddl: %v is in a state this node cannot run (%s, %s): it waits for a node that can", j, j.State, j.SchemaState)
	}
	if j.Version > 0 && st != stepFinish {
		// The previous step's version (committed by this owner or a dead
		// one) is loaded everywhere before the next state is published.
		if err := d.cat.WaitVersion(ctx, j.Version); err != nil {
			return false, err
		}
	}
	begin := time.Now()
	err = d.do(ctx, j, st)
	stepSeconds.WithLabelValues(st.String()).Observe(time.Since(begin).Seconds())
	switch {
	case err == nil, errors.Is(err, errJobChanged):
		return true, nil
	case errors.Is(err, errNotOwner):
		return false, err
	case isJobError(err):
		d.log.Info("ddl job failed", "job", j.ID, "type", j.Type, "step", st.String(), "err", err)
		// The step changed j in memory only: end the stored job.
		if j, err2 := d.head(ctx); err2 != nil || j == nil {
			return false, err2
		} else {
			return true, d.failJob(ctx, j, err)
		}
	}
	return false, fmt.Errorf("%v step %s: %w", j, st, err)
}

// isJobError reports whether err ends the job (a MySQL error of the DDL
// itself: the table exists, a duplicate key, ...) rather than being
// transient (the cluster, a lease, a conflict with another transaction).
func isJobError(err error) bool {
	var e *errno.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code {
	case errno.ErrInfoSchemaExpired, errno.ErrInfoSchemaChanged, errno.ErrLockWaitTimeout, errno.ErrLockDeadlock, errno.ErrWriteConflict:
		return false
	}
	return true
}

func (d *DDL) do(ctx context.Context, j *Job, st step) error {
	switch st {
	case stepRun:
		return d.runSingle(ctx, j)
	case stepDeleteOnly:
		return d.addIndexDeleteOnly(ctx, j)
	case stepWriteOnly:
		if j.Type == ActionDropIndex {
			return d.dropIndexWriteOnly(ctx, j)
		}
		return d.setIndexState(ctx, j, model.StateWriteOnly, false, func() { j.SchemaState = SchemaWriteOnly })
	case stepReorg:
		// A version of its own, as TiDB's: the backfill starts once no
		// transaction that began while the index was delete only can
		// commit (it would span two steps: catalog.CheckCommit).
		start, _ := tablecodec.RecordRange(j.TableID)
		return d.setIndexState(ctx, j, model.StateWriteOnly, false, func() { j.SchemaState, j.ReorgKey = SchemaReorg, start })
	case stepBackfill:
		return d.backfill(ctx, j)
	case stepAddColumn:
		return d.addColumnStep(ctx, j)
	case stepDropColumn:
		return d.dropColumnStep(ctx, j)
	case stepCheckRows:
		return d.checkStep(ctx, j)
	case stepAddFK:
		return d.addFKStep(ctx, j)
	case stepRewriteColumn:
		return d.rewriteColumnStep(ctx, j)
	case stepCheck:
		return d.checkConstraintStep(ctx, j)
	case stepRemoveIndex:
		return d.setIndexState(ctx, j, 0, true, func() {
			j.State, j.SchemaState = StateDone, SchemaNone
			j.dropped = []deleterange.Range{deleterange.Index(j.ID, j.TableID, j.Index.ID)}
		})
	case stepRollback:
		if j.ErrCode == 0 {
			j.setErr(errCancelled())
		}
		var err error
		switch j.Type {
		case ActionAddColumn:
			err = d.rollbackAddColumn(ctx, j)
		case ActionModifyColumn:
			err = d.rollbackRewriteColumn(ctx, j)
		default:
			err = d.setIndexState(ctx, j, 0, true, func() {
				j.State, j.SchemaState = StateRollbackDone, SchemaNone
				// The entries the backfill and DML wrote under the index id.
				j.dropped = []deleterange.Range{deleterange.Index(j.ID, j.TableID, j.Index.ID)}
			})
		}
		if isJobError(err) { // the table is gone: nothing to roll back
			j.State, j.SchemaState = StateRollbackDone, SchemaNone
			return d.updateJob(ctx, j)
		}
		return err
	case stepCancel:
		if j.ErrCode == 0 {
			j.setErr(errCancelled())
		}
		j.State = StateCancelled
		return d.finish(ctx, j)
	case stepFinish:
		return d.finish(ctx, j)
	}
	return fmt.Errorf("ddl: unknown step %v", st)
}

func errCancelled() error { return errno.New(errno.ErrCancelledDDLJob, "Cancelled DDL job") }

// jobStep is the catalog.Step that writes j (as it is when the schema
// change commits, with Version set to the change's version) and the owner
// fence. A job that ended and needs no sync goes to the history at once.
// A cancel committed since the owner read the job (it waited for the
// previous version meanwhile) fails the step with errJobChanged instead
// of being overwritten: the owner reads the job again and rolls it back.
func (d *DDL) jobStep(ctx context.Context, j *Job) catalog.Step {
	return func(start uint64, version int64) ([]*kvrpcpb.Mutation, error) {
		f, err := d.fence(ctx, start)
		if err != nil {
			return nil, err
		}
		if cur, found, err := kv.GetAt(ctx, d.store, queueKey(j.ID), start); err != nil {
			return nil, err
		} else if found {
			cj, err := decodeJob(cur)
			if err != nil {
				return nil, err
			}
			stopping := func(s JobState) bool { return s == StateCancelling || s == StateRollingBack }
			if stopping(cj.State) && !stopping(j.State) && j.State != StateRollbackDone && j.State != StateCancelled {
				return nil, errJobChanged
			}
		}
		j.Version = version
		if j.StartMs == 0 {
			j.StartMs = tso.Physical(start)
		}
		muts := deleterange.Mutations(j.dropped, start)
		if j.Finished() && !needsSync(j) {
			return append(append(muts, d.historyMutations(j, start)...), f), nil
		}
		return append(muts, f, &kvrpcpb.Mutation{Op: kvrpcpb.Op_Put, Key: queueKey(j.ID), Value: encodeJob(j)}), nil
	}
}

// historyMutations move j from the queue to the history.
func (d *DDL) historyMutations(j *Job, start uint64) []*kvrpcpb.Mutation {
	if j.State == StateDone {
		j.State = StateSynced
	}
	j.EndMs = tso.Physical(start)
	return []*kvrpcpb.Mutation{
		{Op: kvrpcpb.Op_Del, Key: queueKey(j.ID)},
		{Op: kvrpcpb.Op_Put, Key: historyKey(j.ID), Value: encodeJob(j)},
	}
}

// updateJob writes j's new state with the owner fence (no schema change).
func (d *DDL) updateJob(ctx context.Context, j *Job) error {
	return d.txn(ctx, func(start uint64) ([]*kvrpcpb.Mutation, error) {
		f, err := d.fence(ctx, start)
		if err != nil {
			return nil, err
		}
		if j.StartMs == 0 {
			j.StartMs = tso.Physical(start)
		}
		return []*kvrpcpb.Mutation{f, {Op: kvrpcpb.Op_Put, Key: queueKey(j.ID), Value: encodeJob(j)}}, nil
	})
}

// finish waits until every node loaded the job's last version (when it
// changed one that needs it), then moves the job to the history, where
// its session finds it.
func (d *DDL) finish(ctx context.Context, j *Job) error {
	if j.Version > 0 && needsSync(j) {
		if err := d.cat.WaitVersion(ctx, j.Version); err != nil {
			return err
		}
	}
	if err := d.syncAffinity(ctx, j); err != nil {
		return err
	}
	err := d.txn(ctx, func(start uint64) ([]*kvrpcpb.Mutation, error) {
		f, err := d.fence(ctx, start)
		if err != nil {
			return nil, err
		}
		return append(d.historyMutations(j, start), f), nil
	})
	if err != nil {
		return err
	}
	d.ended(j)
	return nil
}

// ended records metrics and the log line of a job that reached the history.
func (d *DDL) ended(j *Job) {
	jobsTotal.WithLabelValues(string(j.Type), string(j.State)).Inc()
	took := time.Duration(j.EndMs-j.CreateMs) * time.Millisecond
	jobSeconds.WithLabelValues(string(j.Type)).Observe(took.Seconds())
	d.log.Info("ddl job ended", "job", j.ID, "type", j.Type, "schema", j.SchemaName, "table", j.TableName,
		"state", j.State, "rows", j.RowCount, "took", took, "err", j.ErrMsg)
}

// failJob ends j with err: an ADD INDEX that published its index rolls
// back first; any other job changed nothing and is cancelled.
func (d *DDL) failJob(ctx context.Context, j *Job, err error) error {
	j.setErr(err)
	if rollsBack(j) && j.SchemaState != SchemaNone {
		j.State = StateRollingBack
		return d.updateJob(ctx, j)
	}
	j.State = StateCancelled
	return d.finish(ctx, j)
}

// table reads the job's database and table from the KV layer (not the
// cache), checking they are still the ones the job was created for.
func (d *DDL) table(ctx context.Context, j *Job) (*model.TableInfo, *model.DBInfo, error) {
	db, err := d.db(ctx, j)
	if err != nil {
		return nil, nil, err
	}
	d.cat.Reload(db, j.TableName)
	t, err := d.cat.GetTable(ctx, db, j.TableName)
	if err != nil {
		return nil, nil, err
	}
	if j.TableID != 0 && t.ID != j.TableID {
		return nil, nil, errno.New(errno.ErrNoSuchTable, "Table '%s.%s' was truncated or recreated after the DDL was issued", j.SchemaName, j.TableName)
	}
	return t, db, nil
}

func (d *DDL) db(ctx context.Context, j *Job) (*model.DBInfo, error) {
	db, err := d.cat.GetDB(ctx, j.SchemaName)
	if err != nil {
		return nil, err
	}
	if j.SchemaID != 0 && db.ID != j.SchemaID {
		return nil, errno.New(errno.ErrBadDB, "Unknown database '%s' (it was dropped and created again after the DDL was issued)", j.SchemaName)
	}
	return db, nil
}

// runSingle runs the single step of a create/drop/truncate job.
func (d *DDL) runSingle(ctx context.Context, j *Job) error {
	j.State, j.SchemaState = StateDone, SchemaPublic
	var err error
	switch j.Type {
	case ActionCreateSchema:
		err = d.cat.CreateDB(ctx, j.DB, false, d.jobStep(ctx, j))
		if code(err) == errno.ErrDBCreateExists && j.IfNotExists {
			return d.finish(ctx, j)
		}
	case ActionAlterSchema:
		err = d.cat.UpdateDB(ctx, j.DB, d.jobStep(ctx, j))
	case ActionDropSchema:
		j.SchemaState = SchemaNone
		if j.dropped, err = d.schemaRanges(ctx, j); err != nil {
			break
		}
		err = d.cat.DropDB(ctx, j.SchemaName, false, d.jobStep(ctx, j))
		if code(err) == errno.ErrDBDropExists && j.IfExists {
			return d.finish(ctx, j)
		}
	case ActionCreateTable:
		var db *model.DBInfo
		if db, err = d.db(ctx, j); err == nil {
			err = d.cat.CreateTable(ctx, db, j.Table, false, d.jobStep(ctx, j))
			if code(err) == errno.ErrTableExists && j.IfNotExists {
				return d.finish(ctx, j)
			}
		}
	case ActionDropTable:
		j.SchemaState = SchemaNone
		var db *model.DBInfo
		if db, err = d.db(ctx, j); err == nil {
			if j.dropped, err = d.tableRanges(ctx, j, db); err != nil {
				break
			}
			err = d.cat.DropTable(ctx, db, j.TableName, false, d.jobStep(ctx, j))
			if code(err) == errno.ErrBadTable && j.IfExists {
				return d.finish(ctx, j)
			}
		}
	case ActionTruncateTable:
		var t *model.TableInfo
		var db *model.DBInfo
		if t, db, err = d.table(ctx, j); err == nil {
			j.dropped = []deleterange.Range{deleterange.Table(j.ID, t.ID)}
			err = d.cat.TruncateTable(ctx, db, t, j.NewTableID, d.jobStep(ctx, j))
		}
	case ActionModifyColumn, ActionSetDefault:
		err = d.modifyColumn(ctx, j)
	case ActionRenameTable:
		err = d.renameTable(ctx, j)
	case ActionDropFK:
		err = d.dropFK(ctx, j)
	case ActionAlterTableOptions:
		err = d.alterTableOptions(ctx, j)
	default:
		return fmt.Errorf("ddl: %v is not a one-step job", j)
	}
	if err != nil {
		j.State, j.SchemaState = StateQueueing, SchemaNone
		j.dropped = nil
	}
	return err
}

// tableRanges is the range of the table a DROP TABLE job drops (none for a
// view, or when the table is already gone). Jobs run one at a time, so the
// table read here is the one the step drops.
func (d *DDL) tableRanges(ctx context.Context, j *Job, db *model.DBInfo) ([]deleterange.Range, error) {
	d.cat.Reload(db, j.TableName)
	t, err := d.cat.GetTable(ctx, db, j.TableName)
	if code(err) == errno.ErrNoSuchTable {
		return nil, nil // DropTable answers
	}
	if err != nil || t.IsView() {
		return nil, err
	}
	return []deleterange.Range{deleterange.Table(j.ID, t.ID)}, nil
}

// schemaRanges are the ranges of every table a DROP DATABASE job drops.
func (d *DDL) schemaRanges(ctx context.Context, j *Job) ([]deleterange.Range, error) {
	db, err := d.cat.GetDB(ctx, j.SchemaName)
	if code(err) == errno.ErrBadDB {
		return nil, nil // DropDB answers
	}
	if err != nil {
		return nil, err
	}
	tables, err := d.cat.ListTables(ctx, db)
	if err != nil {
		return nil, err
	}
	var out []deleterange.Range
	for _, t := range tables {
		if !t.IsView() {
			out = append(out, deleterange.Table(j.ID, t.ID))
		}
	}
	return out, nil
}

// code is err's MySQL error code (0 for nil).
func code(err error) uint16 {
	if err == nil {
		return 0
	}
	return errno.FromError(err).Code
}

// addIndexDeleteOnly adds the job's index to the table in state delete
// only, under a new index id recorded in the job.
func (d *DDL) addIndexDeleteOnly(ctx context.Context, j *Job) error {
	t, db, err := d.table(ctx, j)
	if err != nil {
		return err
	}
	if t.FindIndex(j.Index.Name) != nil {
		if j.IfNotExists {
			j.State, j.SchemaState = StateDone, SchemaPublic
			return d.finish(ctx, j)
		}
		return errno.New(1061, "Duplicate key name '%s'", j.Index.Name)
	}
	for _, c := range j.Index.Columns {
		if c.Offset >= len(t.Columns) || t.Columns[c.Offset].Name != c.Name {
			return errno.New(1072, "Key column '%s' doesn't exist in table", c.Name)
		}
	}
	nt := t.Clone()
	nt.MaxIndexID++
	ix := *j.Index
	ix.ID, ix.State = nt.MaxIndexID, model.StateDeleteOnly
	nt.Indices = append(nt.Indices, &ix)
	j.Index.ID = ix.ID
	j.TableID = t.ID
	j.State, j.SchemaState = StateRunning, SchemaDeleteOnly
	if err := d.cat.UpdateTable(ctx, db, nt, d.jobStep(ctx, j)); err != nil {
		j.State, j.SchemaState = StateQueueing, SchemaNone
		return err
	}
	d.log.Info("add index: delete only", "job", j.ID, "table", t.Name, "index", ix.Name, "table_id", t.ID, "index_id", ix.ID)
	return nil
}

// dropIndexWriteOnly finds the index to drop and makes it write only
// (queries stop reading it; DML still maintains it for nodes that do).
func (d *DDL) dropIndexWriteOnly(ctx context.Context, j *Job) error {
	t, _, err := d.table(ctx, j)
	if err != nil {
		return err
	}
	ix := t.FindIndex(j.IndexName)
	if ix == nil {
		if j.IfExists {
			j.State, j.SchemaState = StateDone, SchemaNone
			return d.finish(ctx, j)
		}
		return errno.New(1091, "Can't DROP '%s'; check that column/key exists", j.IndexName)
	}
	j.Index = &model.IndexInfo{ID: ix.ID, Name: ix.Name}
	j.TableID = t.ID
	return d.setIndexState(ctx, j, model.StateWriteOnly, false, func() { j.State, j.SchemaState = StateRunning, SchemaWriteOnly })
}

// setIndexState publishes the job's index in state st (remove: drops it
// from the table), with the job changed by update, as one schema version.
func (d *DDL) setIndexState(ctx context.Context, j *Job, st model.SchemaState, remove bool, update func()) error {
	t, db, err := d.table(ctx, j)
	if err != nil {
		return err
	}
	nt := t.Clone()
	found := false
	for i, ix := range nt.Indices {
		if ix.ID != j.Index.ID {
			continue
		}
		found = true
		if remove {
			nt.Indices = append(nt.Indices[:i:i], nt.Indices[i+1:]...)
		} else {
			ix.State = st
		}
		break
	}
	if !found && !remove {
		return errno.New(errno.ErrUnknown, "index %s of %s.%s vanished during %v", j.Index.Name, j.SchemaName, j.TableName, j)
	}
	saved := *j
	update()
	if err := d.cat.UpdateTable(ctx, db, nt, d.jobStep(ctx, j)); err != nil {
		*j = saved
		return err
	}
	d.log.Info(string(j.Type)+": "+j.SchemaState, "job", j.ID, "table", j.TableName, "index", j.Index.Name, "state", j.State, "version", j.Version)
	return nil
}
