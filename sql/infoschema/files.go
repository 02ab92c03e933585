package infoschema

import (
	"context"
	"strings"

	"github.com/stratadb/strata/sql/model"
)

// Tables that describe storage MySQL has and Strata does not: tablespace
// files and partitions. Tools read them before dumping (mysqldump's
// tablespace query joins FILES with PARTITIONS), so they exist with
// MySQL 8.0's columns: FILES is empty (no tablespaces), PARTITIONS has
// the one row MySQL shows for every non-partitioned table.

var filesColumns = []col{
	{"FILE_ID", bigint}, {"FILE_NAME", text}, {"FILE_TYPE", varchar(256)}, {"TABLESPACE_NAME", varchar(268)},
	{"TABLE_CATALOG", name64}, {"TABLE_SCHEMA", varchar(64)}, {"TABLE_NAME", varchar(64)},
	{"LOGFILE_GROUP_NAME", varchar(256)}, {"LOGFILE_GROUP_NUMBER", bigint}, {"ENGINE", name64},
	{"FULLTEXT_KEYS", varchar(64)}, {"DELETED_ROWS", varchar(64)}, {"UPDATE_COUNT", varchar(64)},
	{"FREE_EXTENTS", bigint}, {"TOTAL_EXTENTS", bigint}, {"EXTENT_SIZE", bigint}, {"INITIAL_SIZE", bigint},
	{"MAXIMUM_SIZE", bigint}, {"AUTOEXTEND_SIZE", bigint}, {"CREATION_TIME", varchar(64)},
	{"LAST_UPDATE_TIME", varchar(64)}, {"LAST_ACCESS_TIME", varchar(64)}, {"RECOVER_TIME", varchar(64)},
	{"TRANSACTION_COUNTER", varchar(64)}, {"VERSION", bigint}, {"ROW_FORMAT", varchar(256)},
	{"TABLE_ROWS", varchar(64)}, {"AVG_ROW_LENGTH", varchar(64)}, {"DATA_LENGTH", varchar(64)},
	{"MAX_DATA_LENGTH", varchar(64)}, {"INDEX_LENGTH", varchar(64)}, {"DATA_FREE", bigint},
	{"CREATE_TIME", varchar(64)}, {"UPDATE_TIME", varchar(64)}, {"CHECK_TIME", varchar(64)},
	{"CHECKSUM", varchar(64)}, {"STATUS", varchar(256)}, {"EXTRA", varchar(256)},
}

var partitionsColumns = []col{
	{"TABLE_CATALOG", name64}, {"TABLE_SCHEMA", name64}, {"TABLE_NAME", name64},
	{"PARTITION_NAME", varchar(64)}, {"SUBPARTITION_NAME", varchar(64)},
	{"PARTITION_ORDINAL_POSITION", intU}, {"SUBPARTITION_ORDINAL_POSITION", intU},
	{"PARTITION_METHOD", varchar(13)}, {"SUBPARTITION_METHOD", varchar(13)},
	{"PARTITION_EXPRESSION", varchar(2048)}, {"SUBPARTITION_EXPRESSION", varchar(2048)},
	{"PARTITION_DESCRIPTION", text}, {"TABLE_ROWS", bigintU}, {"AVG_ROW_LENGTH", bigintU},
	{"DATA_LENGTH", bigintU}, {"MAX_DATA_LENGTH", bigintU}, {"INDEX_LENGTH", bigintU}, {"DATA_FREE", bigintU},
	{"CREATE_TIME", dt}, {"UPDATE_TIME", dt}, {"CHECK_TIME", dt}, {"CHECKSUM", bigint},
	{"PARTITION_COMMENT", notNull(text)}, {"NODEGROUP", varchar(256)}, {"TABLESPACE_NAME", varchar(268)},
}

func noRows(context.Context, Viewer) ([][]datum, error) { return nil, nil }

func (s *Schema) partitions(ctx context.Context, v Viewer) ([][]datum, error) {
	var rows [][]datum
	err := s.eachTable(ctx, v, func(db string, t *model.TableInfo) error {
		if t.IsView() {
			return nil
		}
		rows = append(rows, []datum{str("def"), str(db), str(t.Name), null, null, null, null, null, null, null, null,
			null, unum(0), unum(0), unum(0), unum(0), unum(0), unum(0), null, null, null, null, str(""), null, null})
		return nil
	})
	return rows, err
}

// Stored programs Strata does not have: TRIGGERS, ROUTINES and EVENTS are
// empty (mysqldump lists a table's triggers through TRIGGERS). VIEWS
// lists the views.

var triggersColumns = []col{
	{"TRIGGER_CATALOG", name64}, {"TRIGGER_SCHEMA", name64}, {"TRIGGER_NAME", name64},
	{"EVENT_MANIPULATION", notNull(varchar(6))}, {"EVENT_OBJECT_CATALOG", name64}, {"EVENT_OBJECT_SCHEMA", name64},
	{"EVENT_OBJECT_TABLE", name64}, {"ACTION_ORDER", notNull(intU)}, {"ACTION_CONDITION", text},
	{"ACTION_STATEMENT", notNull(ltext)}, {"ACTION_ORIENTATION", notNull(varchar(3))}, {"ACTION_TIMING", notNull(varchar(6))},
	{"ACTION_REFERENCE_OLD_TABLE", text}, {"ACTION_REFERENCE_NEW_TABLE", text},
	{"ACTION_REFERENCE_OLD_ROW", notNull(varchar(3))}, {"ACTION_REFERENCE_NEW_ROW", notNull(varchar(3))},
	{"CREATED", notNull(dt)}, {"SQL_MODE", notNull(varchar(520))}, {"DEFINER", notNull(varchar(288))},
	{"CHARACTER_SET_CLIENT", name64}, {"COLLATION_CONNECTION", name64}, {"DATABASE_COLLATION", name64},
}

var routinesColumns = []col{
	{"SPECIFIC_NAME", name64}, {"ROUTINE_CATALOG", name64}, {"ROUTINE_SCHEMA", name64}, {"ROUTINE_NAME", name64},
	{"ROUTINE_TYPE", notNull(varchar(9))}, {"DATA_TYPE", ltext}, {"CHARACTER_MAXIMUM_LENGTH", bigint},
	{"CHARACTER_OCTET_LENGTH", bigint}, {"NUMERIC_PRECISION", intU}, {"NUMERIC_SCALE", intU},
	{"DATETIME_PRECISION", intU}, {"CHARACTER_SET_NAME", varchar(64)}, {"COLLATION_NAME", varchar(64)},
	{"DTD_IDENTIFIER", ltext}, {"ROUTINE_BODY", notNull(varchar(8))}, {"ROUTINE_DEFINITION", ltext},
	{"EXTERNAL_NAME", varchar(64)}, {"EXTERNAL_LANGUAGE", notNull(varchar(64))}, {"PARAMETER_STYLE", notNull(varchar(3))},
	{"IS_DETERMINISTIC", notNull(varchar(3))}, {"SQL_DATA_ACCESS", notNull(varchar(17))}, {"SQL_PATH", varchar(64)},
	{"SECURITY_TYPE", notNull(varchar(7))}, {"CREATED", notNull(dt)}, {"LAST_ALTERED", notNull(dt)},
	{"SQL_MODE", notNull(varchar(520))}, {"ROUTINE_COMMENT", notNull(text)}, {"DEFINER", notNull(varchar(288))},
	{"CHARACTER_SET_CLIENT", name64}, {"COLLATION_CONNECTION", name64}, {"DATABASE_COLLATION", name64},
}

var eventsColumns = []col{
	{"EVENT_CATALOG", name64}, {"EVENT_SCHEMA", name64}, {"EVENT_NAME", name64}, {"DEFINER", notNull(varchar(288))},
	{"TIME_ZONE", name64}, {"EVENT_BODY", notNull(varchar(3))}, {"EVENT_DEFINITION", notNull(ltext)},
	{"EVENT_TYPE", notNull(varchar(9))}, {"EXECUTE_AT", dt}, {"INTERVAL_VALUE", varchar(256)},
	{"INTERVAL_FIELD", varchar(18)}, {"SQL_MODE", notNull(varchar(520))}, {"STARTS", dt}, {"ENDS", dt},
	{"STATUS", notNull(varchar(21))}, {"ON_COMPLETION", notNull(varchar(12))}, {"CREATED", notNull(dt)},
	{"LAST_ALTERED", notNull(dt)}, {"LAST_EXECUTED", dt}, {"EVENT_COMMENT", name64}, {"ORIGINATOR", notNull(intU)},
	{"CHARACTER_SET_CLIENT", name64}, {"COLLATION_CONNECTION", name64}, {"DATABASE_COLLATION", name64},
}

var viewsColumns = []col{
	{"TABLE_CATALOG", name64}, {"TABLE_SCHEMA", name64}, {"TABLE_NAME", name64}, {"VIEW_DEFINITION", ltext},
	{"CHECK_OPTION", varchar(8)}, {"IS_UPDATABLE", varchar(3)}, {"DEFINER", varchar(288)},
	{"SECURITY_TYPE", varchar(7)}, {"CHARACTER_SET_CLIENT", name64}, {"COLLATION_CONNECTION", name64},
}

func (s *Schema) views(ctx context.Context, v Viewer) ([][]datum, error) {
	var rows [][]datum
	err := s.eachTable(ctx, v, func(db string, t *model.TableInfo) error {
		if !t.IsView() {
			return nil
		}
		check := t.View.Check
		if check == "" {
			check = "NONE"
		}
		rows = append(rows, []datum{str("def"), str(db), str(t.Name), str(t.View.Select), str(check), str("NO"),
			str(strings.ReplaceAll(t.View.Definer, "`", "")), str(t.View.Security), str("utf8mb4"), str("utf8mb4_bin")})
		return nil
	})
	return rows, err
}
