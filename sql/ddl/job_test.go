package ddl

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/model"
)

func TestNextStep(t *testing.T) {
	for _, tc := range []struct {
		typ    ActionType
		state  JobState
		schema string
		want   step
	}{
		{ActionAddIndex, StateQueueing, SchemaNone, stepDeleteOnly},
		{ActionAddIndex, StateRunning, SchemaDeleteOnly, stepWriteOnly},
		{ActionAddIndex, StateRunning, SchemaWriteOnly, stepReorg},
		{ActionAddIndex, StateRunning, SchemaReorg, stepBackfill},
		{ActionAddIndex, StateDone, SchemaPublic, stepFinish},
		{ActionAddIndex, StateCancelling, SchemaNone, stepCancel},
		{ActionAddIndex, StateCancelling, SchemaDeleteOnly, stepRollback},
		{ActionAddIndex, StateCancelling, SchemaReorg, stepRollback},
		{ActionAddIndex, StateRollingBack, SchemaReorg, stepRollback},
		{ActionAddIndex, StateRollbackDone, SchemaNone, stepFinish},
		{ActionDropIndex, StateQueueing, SchemaNone, stepWriteOnly},
		{ActionDropIndex, StateRunning, SchemaWriteOnly, stepRemoveIndex},
		{ActionDropIndex, StateDone, SchemaNone, stepFinish},
		{ActionDropIndex, StateCancelling, SchemaNone, stepCancel},
		{ActionCreateTable, StateQueueing, SchemaNone, stepRun},
		{ActionCreateTable, StateCancelling, SchemaNone, stepCancel},
		{ActionCreateTable, StateCancelled, SchemaNone, stepFinish},
		{ActionDropTable, StateQueueing, SchemaNone, stepRun},
		{ActionDropTable, StateDone, SchemaNone, stepFinish},
		{ActionTruncateTable, StateQueueing, SchemaNone, stepRun},
		{ActionCreateSchema, StateQueueing, SchemaNone, stepRun},
		{ActionDropSchema, StateQueueing, SchemaNone, stepRun},
		{ActionAddIndex, StateRunning, "no such state", stepNone},
		{ActionAddColumn, StateQueueing, SchemaNone, stepAddColumn},
		{ActionAddColumn, StateRunning, SchemaDeleteOnly, stepAddColumn},
		{ActionAddColumn, StateRunning, SchemaWriteOnly, stepAddColumn},
		{ActionAddColumn, StateDone, SchemaPublic, stepFinish},
		{ActionAddColumn, StateCancelling, SchemaNone, stepCancel},
		{ActionAddColumn, StateCancelling, SchemaWriteOnly, stepRollback},
		{ActionAddColumn, StateRunning, SchemaReorg, stepNone},
		{ActionDropColumn, StateQueueing, SchemaNone, stepDropColumn},
		{ActionDropColumn, StateRunning, SchemaPublic, stepDropColumn},
		{ActionDropColumn, StateRunning, SchemaWriteOnly, stepDropColumn},
		{ActionDropColumn, StateRunning, SchemaDeleteOnly, stepDropColumn},
		{ActionDropColumn, StateDone, SchemaNone, stepFinish},
		{ActionDropColumn, StateCancelling, SchemaNone, stepCancel},
		{ActionModifyColumn, StateQueueing, SchemaNone, stepRun},
		{ActionSetDefault, StateQueueing, SchemaNone, stepRun},
		{ActionRenameTable, StateQueueing, SchemaNone, stepRun},
	} {
		j := &Job{Type: tc.typ, State: tc.state, SchemaState: tc.schema}
		require.Equal(t, tc.want, nextStep(j), "%s %s %s", tc.typ, tc.state, tc.schema)
	}
}

func TestCancelErr(t *testing.T) {
	for _, tc := range []struct {
		typ    ActionType
		state  JobState
		schema string
		code   uint16 // 0: can be cancelled
	}{
		{ActionAddIndex, StateQueueing, SchemaNone, 0},
		{ActionAddIndex, StateRunning, SchemaDeleteOnly, 0},
		{ActionAddIndex, StateRunning, SchemaWriteOnly, 0},
		{ActionAddIndex, StateRunning, SchemaReorg, 0},
		{ActionAddIndex, StateDone, SchemaPublic, errno.ErrCancelFinishedDDLJob},
		{ActionAddIndex, StateCancelling, SchemaReorg, errno.ErrCancelFinishedDDLJob},
		{ActionAddColumn, StateRunning, SchemaWriteOnly, 0},
		{ActionAddColumn, StateRunning, SchemaDeleteOnly, 0},
		{ActionDropColumn, StateQueueing, SchemaNone, 0},
		{ActionDropColumn, StateRunning, SchemaWriteOnly, errno.ErrCannotCancelDDLJob},
		{ActionAddIndex, StateRollbackDone, SchemaNone, errno.ErrCancelFinishedDDLJob},
		{ActionCreateTable, StateQueueing, SchemaNone, 0},
		{ActionCreateTable, StateSynced, SchemaPublic, errno.ErrCancelFinishedDDLJob},
		{ActionDropIndex, StateQueueing, SchemaNone, 0},
		{ActionDropIndex, StateRunning, SchemaWriteOnly, errno.ErrCannotCancelDDLJob},
	} {
		err := cancelErr(&Job{ID: 7, Type: tc.typ, State: tc.state, SchemaState: tc.schema})
		if tc.code == 0 {
			require.NoError(t, err, "%s %s %s", tc.typ, tc.state, tc.schema)
			continue
		}
		require.Equal(t, tc.code, errno.FromError(err).Code, "%s %s %s", tc.typ, tc.state, tc.schema)
	}
}

func TestJobRoundTrip(t *testing.T) {
	tbl := &model.TableInfo{ID: 5, Name: "t", HandleOffset: -1, AutoIncOffset: -1,
		Columns: []*model.ColumnInfo{{ID: 1, Name: "a"}}}
	j := &Job{ID: 3, Type: ActionCreateTable, SchemaName: "d", TableName: "t", Table: tbl, State: StateRunning,
		SchemaState: SchemaReorg, ReorgKey: []byte("t\x80k"), Version: 9, RowCount: 42}
	j.setErr(errno.New(errno.ErrDupEntry, "Duplicate entry '1' for key 't.k'"))
	got, err := decodeJob(encodeJob(j))
	require.NoError(t, err)
	require.Equal(t, j.ReorgKey, got.ReorgKey)
	require.Equal(t, 0, got.Table.FindColumn("A"), "the table's derived fields are rebuilt")
	require.Equal(t, errno.ErrDupEntry, errno.FromError(got.Err()).Code)
	require.Equal(t, "23000", errno.FromError(got.Err()).State)
	require.False(t, got.Finished())
	got.State = StateRollbackDone
	require.True(t, got.Finished())
	_, err = decodeJob([]byte("{"))
	require.Error(t, err)
}
