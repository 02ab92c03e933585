package ddl

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/stratadb/strata/kv/codec"
	"github.com/stratadb/strata/sql/catalog"
	"github.com/stratadb/strata/sql/deleterange"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/tablecodec"
)

// ActionType is what a job does, named as TiDB's JOB_TYPE column names it.
type ActionType string

// The job types.
const (
	ActionCreateSchema  ActionType = "create schema"
	ActionDropSchema    ActionType = "drop schema"
	ActionCreateTable   ActionType = "create table"
	ActionDropTable     ActionType = "drop table"
	ActionTruncateTable ActionType = "truncate table"
	ActionAddIndex      ActionType = "add index"
	ActionDropIndex     ActionType = "drop index"
	ActionAddColumn     ActionType = "add column"
	ActionDropColumn    ActionType = "drop column"
	ActionModifyColumn  ActionType = "modify column"
	ActionSetDefault    ActionType = "set default value"
	ActionRenameTable   ActionType = "rename table"
	ActionAddFK         ActionType = "add foreign key"
	ActionDropFK        ActionType = "drop foreign key"
	// ActionAlterTableOptions: ALTER TABLE ... COMMENT = / AFFINITY =.
	ActionAlterTableOptions ActionType = "alter table options"
	ActionAddCheck          ActionType = "add check constraint"
	ActionDropCheck         ActionType = "drop check constraint"
	ActionAlterCheck        ActionType = "alter check constraint"
	// ActionAlterSchema: ALTER DATABASE ... CHARACTER SET / COLLATE.
	ActionAlterSchema ActionType = "modify schema charset and collate"
)

// JobState is where a job is in its life, as TiDB's STATE column names it.
type JobState string

// The job states. A job is queueing until the owner takes its first step,
// running while its steps go on, and ends done (history: synced once every
// node loaded its last version), cancelled (stopped before it changed the
// schema: an error or ADMIN CANCEL) or rollback done (an ADD INDEX whose
// index was removed again). Cancelling and rollingback are requests the
// owner acts on at its next step.
const (
	StateQueueing     JobState = "queueing"
	StateRunning      JobState = "running"
	StateDone         JobState = "done"
	StateSynced       JobState = "synced"
	StateCancelling   JobState = "cancelling"
	StateCancelled    JobState = "cancelled"
	StateRollingBack  JobState = "rollingback"
	StateRollbackDone JobState = "rollback done"
)

// Schema states of a job, as TiDB's SCHEMA_STATE column names them.
const (
	SchemaNone       = "none"
	SchemaDeleteOnly = "delete only"
	SchemaWriteOnly  = "write only"
	SchemaReorg      = "write reorganization"
	SchemaPublic     = "public"
)

// Job is one DDL statement's work, persisted in the job queue ('m'
// DDLJob{id}) while it runs and in the job history ('m' DDLHistory{id})
// once it ended. Every change of a job is one transaction.
type Job struct {
	ID          int64      `json:"id"`
	Type        ActionType `json:"type"`
	SchemaID    int64      `json:"schema_id"`
	SchemaName  string     `json:"schema_name"`
	TableID     int64      `json:"table_id,omitempty"`
	TableName   string     `json:"table_name,omitempty"`
	State       JobState   `json:"state"`
	SchemaState string     `json:"schema_state"`
	RowCount    int64      `json:"row_count"`
	Query       string     `json:"query,omitempty"`

	// Arguments, by type.
	DB         *model.DBInfo    `json:"db,omitempty"`         // create schema
	Table      *model.TableInfo `json:"table,omitempty"`      // create table
	Index      *model.IndexInfo `json:"index,omitempty"`      // add index (its ID is set by the first step)
	IndexName  string           `json:"index_name,omitempty"` // drop index
	NewTableID int64            `json:"new_table_id,omitempty"`
	// Columns: add column (the new columns, in statement order, with
	// Positions); modify column / set default value (the column as it
	// will be, Columns[0], replacing ColumnName; Positions[0] when it
	// moves). ColumnName: drop column.
	// CheckRows: a modify column that makes the column NOT NULL or
	// narrower: DML refuses what the new type refuses (write only), a
	// version later (write reorganization) no transaction that could
	// write such a value can commit, and the rows are checked.
	Columns   []*model.ColumnInfo `json:"columns,omitempty"`
	CheckRows bool                `json:"check_rows,omitempty"`
	// Rewrite: a modify column whose type change the stored rows do not
	// decode unchanged under: a changing column and changing copies of
	// its indexes are built and every row rewritten (reorgcolumn.go).
	// Lenient: the ALTER ran outside strict mode (values that do not fit
	// are stored adjusted, with Warnings, as INSERT does).
	// TimeZone: the ALTER's @@time_zone when a rewrite changes a column
	// between TIMESTAMP and another type and that zone is not UTC: values
	// are converted in it, as INSERT converts them (model.ChangeInfo).
	Rewrite    bool             `json:"rewrite,omitempty"`
	Lenient    bool             `json:"lenient,omitempty"`
	TimeZone   string           `json:"time_zone,omitempty"`
	Warnings   []JobWarning     `json:"warnings,omitempty"`
	Positions  []ColumnPosition `json:"positions,omitempty"`
	ColumnName string           `json:"column_name,omitempty"`
	// FK: add foreign key (its ID is given by the first step; CheckRows:
	// the existing rows are checked, foreign_key_checks was on); drop
	// foreign key (FK.Name only).
	FK *model.FKInfo `json:"fk,omitempty"`
	// Check: add / drop / alter check constraint (the constraint; its
	// name and the wanted Enforced for an alter, its name for a drop;
	// CheckRows: the existing rows are validated, constraint.go).
	Check *model.CheckInfo `json:"check,omitempty"`
	// Rename table: the new database and name.
	NewSchemaID   int64  `json:"new_schema_id,omitempty"`
	NewSchemaName string `json:"new_schema_name,omitempty"`
	NewTableName  string `json:"new_table_name,omitempty"`
	// TableOptions: alter table options (affinity.go).
	TableOptions *TableOptions `json:"table_options,omitempty"`
	IfExists     bool          `json:"if_exists,omitempty"`
	IfNotExists  bool          `json:"if_not_exists,omitempty"`

	// ReorgKey is the backfill's checkpoint: the row key the next batch
	// starts at (an ADD INDEX in write reorganization). It is written in
	// the same transaction as the batch's index entries.
	ReorgKey []byte `json:"reorg_key,omitempty"`

	// Version is the schema version the job's last step committed; the
	// owner waits until every node loaded it before the next step.
	Version int64 `json:"version,omitempty"`

	// The error a failed or cancelled job ends with (MySQL code, SQLSTATE,
	// message), returned to the session that waits for it.
	ErrCode  uint16 `json:"err_code,omitempty"`
	ErrState string `json:"err_state,omitempty"`
	ErrMsg   string `json:"err_msg,omitempty"`

	// dropped are the key ranges the step being taken leaves unreachable
	// (set by the step, not persisted): jobStep records them for the GC
	// leader to delete (package deleterange) in the step's transaction.
	dropped []deleterange.Range

	// Times, in milliseconds of the cluster's (PD's) clock.
	CreateMs int64 `json:"create_ms"`
	StartMs  int64 `json:"start_ms,omitempty"`
	EndMs    int64 `json:"end_ms,omitempty"`
}

// Err is the error the job ended with, or nil.
func (j *Job) Err() error {
	if j.ErrCode == 0 {
		return nil
	}
	return &errno.Error{Code: j.ErrCode, State: j.ErrState, Msg: j.ErrMsg}
}

func (j *Job) setErr(err error) {
	e := errno.FromError(err)
	j.ErrCode, j.ErrState, j.ErrMsg = e.Code, e.State, e.Msg
}

// Finished reports whether the job ended (it only waits to move to the
// history).
func (j *Job) Finished() bool {
	switch j.State {
	case StateDone, StateSynced, StateCancelled, StateRollbackDone:
		return true
	}
	return false
}

// String names the job for logs and errors.
func (j *Job) String() string {
	return fmt.Sprintf("job %d (%s %s.%s)", j.ID, j.Type, j.SchemaName, j.TableName)
}

func encodeJob(j *Job) []byte {
	v, err := json.Marshal(j)
	if err != nil {
		panic(fmt.Sprintf("ddl: encode %v: %v", j, err)) // only plain data
	}
	return v
}

func decodeJob(v []byte) (*Job, error) {
	j := new(Job)
	if err := json.Unmarshal(v, j); err != nil {
		return nil, fmt.Errorf("ddl: corrupt job: %w", err)
	}
	if j.Table != nil {
		j.Table.Init()
	}
	return j, nil
}

func queuePrefix() []byte   { return catalog.MetaKey("DDLJob") }
func historyPrefix() []byte { return catalog.MetaKey("DDLHistory") }
func ownerKey() []byte      { return catalog.MetaKey("DDLOwner") }

func queueKey(id int64) []byte   { return codec.EncodeInt(queuePrefix(), id) }
func historyKey(id int64) []byte { return codec.EncodeInt(historyPrefix(), id) }

func prefixEnd(p []byte) []byte { return tablecodec.PrefixNext(p) }

// physicalMs is the wall-clock part of a TSO timestamp.

func msTime(ms int64) time.Time { return time.UnixMilli(ms) }

// step is the owner's next action on a job.
type step int

const (
	stepNone          step = iota
	stepRun                // the single step of a one-step job (create/drop/truncate)
	stepDeleteOnly         // add index: none -> delete only
	stepWriteOnly          // add index: delete only -> write only; drop index: public -> write only
	stepReorg              // add index: write only -> write reorganization (checkpoint at the first row)
	stepBackfill           // add index: backfill from the checkpoint, then public
	stepRemoveIndex        // drop index: write only -> gone
	stepRollback           // add index: remove the index again (cancelled or failed)
	stepCancel             // the job changed nothing yet: it ends cancelled
	stepFinish             // wait for the last version, move the job to the history
	stepAddColumn          // add column: none -> delete only -> write only -> public
	stepDropColumn         // drop column: (indexes write only) -> write only -> delete only -> gone
	stepCheckRows          // modify column to NOT NULL / narrower: refuse -> reorg -> check the rows, then public
	stepAddFK              // add foreign key: none -> write only (DML keeps it) -> rows checked -> public, or removed again
	stepRewriteColumn      // modify column with rewrite: none -> delete only -> write only -> reorg (rows rewritten) -> public
	stepCheck              // add / alter / drop check constraint: none -> (write only -> reorg -> rows checked) -> public
)

var stepNames = [...]string{"none", "run", "delete only", "write only", "reorg", "backfill", "remove index", "rollback", "cancel", "finish", "add column", "drop column", "check rows", "add foreign key", "rewrite column", "check constraint"}

func (s step) String() string { return stepNames[s] }

// nextStep is the job state machine: what the owner does next with j.
func nextStep(j *Job) step {
	if j.Finished() {
		return stepFinish
	}
	if j.State == StateCancelling || j.State == StateRollingBack {
		if rollsBack(j) && j.SchemaState != SchemaNone {
			return stepRollback
		}
		return stepCancel
	}
	switch j.Type {
	case ActionAddColumn:
		switch j.SchemaState {
		case SchemaNone, SchemaDeleteOnly, SchemaWriteOnly:
			return stepAddColumn
		}
	case ActionModifyColumn:
		if j.Rewrite {
			switch j.SchemaState {
			case SchemaNone, SchemaDeleteOnly, SchemaWriteOnly, SchemaReorg:
				return stepRewriteColumn
			}
			return stepNone
		}
		if j.CheckRows {
			switch j.SchemaState {
			case SchemaNone, SchemaWriteOnly, SchemaReorg:
				return stepCheckRows
			}
			return stepNone
		}
		if j.SchemaState == SchemaNone {
			return stepRun
		}
	case ActionDropColumn:
		switch j.SchemaState {
		case SchemaNone, SchemaPublic, SchemaWriteOnly, SchemaDeleteOnly:
			return stepDropColumn
		}
	case ActionAddFK:
		switch j.SchemaState {
		case SchemaNone, SchemaWriteOnly:
			return stepAddFK
		}
	case ActionAddCheck, ActionAlterCheck, ActionDropCheck:
		switch j.SchemaState {
		case SchemaNone, SchemaWriteOnly, SchemaReorg:
			return stepCheck
		}
	case ActionAddIndex:
		switch j.SchemaState {
		case SchemaNone:
			return stepDeleteOnly
		case SchemaDeleteOnly:
			return stepWriteOnly
		case SchemaWriteOnly:
			return stepReorg
		case SchemaReorg:
			return stepBackfill
		}
	case ActionDropIndex:
		switch j.SchemaState {
		case SchemaNone, SchemaPublic:
			return stepWriteOnly
		case SchemaWriteOnly:
			return stepRemoveIndex
		}
	default:
		if j.SchemaState == SchemaNone {
			return stepRun
		}
	}
	return stepNone // a state this version does not know: left alone
}

// cancelErr is why ADMIN CANCEL DDL JOBS cannot cancel j now (nil: it
// can). An ADD INDEX or ADD COLUMN can be cancelled until it is public (it
// is rolled back); other jobs only before their first step (they are one or two
// steps and the schema they changed is already in use).
func cancelErr(j *Job) error {
	switch {
	case j.Finished():
		return errno.New(errno.ErrCancelFinishedDDLJob, "This job:%d is finished, so can't be cancelled", j.ID)
	case j.State == StateCancelling || j.State == StateRollingBack:
		return errno.New(errno.ErrCancelFinishedDDLJob, "This job:%d is finished, so can't be cancelled", j.ID)
	case rollsBack(j) && j.SchemaState != SchemaPublic:
		return nil
	case j.SchemaState == SchemaNone:
		return nil
	}
	return errno.New(errno.ErrCannotCancelDDLJob, "This job:%d is almost finished, can't be cancelled now", j.ID)
}

// rollsBack reports whether j, failed or cancelled after its first step,
// is rolled back (its non-public objects removed again): an ADD INDEX, an
// ADD COLUMN, a MODIFY COLUMN that rewrites rows.
func rollsBack(j *Job) bool {
	return j.Type == ActionAddIndex || j.Type == ActionAddColumn || (j.Type == ActionModifyColumn && j.Rewrite)
}

// JobWarning is a warning a job's run raised for its statement (a value
// MODIFY COLUMN stored adjusted outside strict mode).
type JobWarning struct {
	Code uint16 `json:"code"`
	Msg  string `json:"msg"`
}

// maxJobWarnings bounds a job's warnings, as max_error_count (64) bounds
// a statement's.
const maxJobWarnings = 64

// needsSync reports whether a job's last step must be loaded by every node
// before the statement returns: a change that invalidates what nodes
// cached (drops, truncates, index states). A new database or table needs
// no wait: a node that has not loaded it yet answers "doesn't exist".
//
// A column step or a rename needs it too: ADD COLUMN's statement returns
// once every node shows the column. So does a new table with FOREIGN
// KEYs: a node that does not know it would delete a parent row without
// looking for its children.
func needsSync(j *Job) bool {
	if j.Type == ActionCreateTable {
		// A table with an AFFINITY option also needs its finish step:
		// it tells PD (syncAffinity).
		return j.Table != nil && (len(j.Table.ForeignKeys) > 0 || j.Table.Affinity != "")
	}
	return j.Type != ActionCreateSchema
}
