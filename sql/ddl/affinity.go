package ddl

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/collate"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/model"
)

// Data affinity from SQL (TiDB 8.5.5's AFFINITY table option): a table
// created or altered with AFFINITY = 'table' is an affinity group in PD,
// which then places all its regions' voters on the same stores and their
// leaders on one store (pd/schedule/affinity.go), so that an index lookup
// or a transaction over the table stays on one store. 'none' (or '')
// removes the group. The owner tells PD in the job's last step, before the
// job reaches the history, so the statement returns with PD already
// holding the change; reconcileAffinity repairs what a crash between the
// two left (and removes groups of tables that no longer exist).

// ErrInvalidAffinityOption is TiDB's error for a bad AFFINITY value.
const ErrInvalidAffinityOption uint16 = 8266

// affinityReconcileInterval is how often the owner compares PD's groups
// with the catalog.
const affinityReconcileInterval = 5 * time.Minute

// Affinity returns the level an AFFINITY table option sets: "table", or ""
// for 'none' / ”. 'partition' is refused (no table here is partitioned),
// as is any other value.
func Affinity(value string) (string, error) {
	level, ok := ast.NormalizeTableAffinityLevel(value)
	switch {
	case !ok:
		return "", errno.New(ErrInvalidAffinityOption, "Invalid AFFINITY '%s'", value)
	case level == ast.TableAffinityLevelPartition:
		return "", errno.New(ErrInvalidAffinityOption, "Can not set AFFINITY='%s' on a non-partition table.", level)
	case level == ast.TableAffinityLevelNone:
		return "", nil
	}
	return level, nil
}

// TableOptions are the table options an ALTER TABLE changes (nil: kept).
type TableOptions struct {
	Comment  *string `json:"comment,omitempty"`
	Affinity *string `json:"affinity,omitempty"`
	// Collate: the table's default collation ([DEFAULT] CHARACTER SET /
	// COLLATE), the one columns added later get; existing columns keep
	// theirs, as in MySQL.
	Collate *string `json:"collate,omitempty"`
}

// alterTableOptions is the one step of an ALTER TABLE ... <table option>
// job.
func (d *DDL) alterTableOptions(ctx context.Context, j *Job) error {
	o := j.TableOptions
	if o == nil {
		return fmt.Errorf("ddl: %v has no table options", j)
	}
	return d.columnStep(ctx, j, func(t *model.TableInfo) error {
		if o.Comment != nil {
			t.Comment = *o.Comment
		}
		if o.Affinity != nil {
			t.Affinity = *o.Affinity
		}
		if o.Collate != nil {
			t.Collate = *o.Collate
			if *o.Collate == collate.Default.Name {
				t.Collate = "" // as CREATE TABLE records the default
			}
		}
		return nil
	}, func() { j.State, j.SchemaState = StateDone, SchemaPublic })
}

// syncAffinity brings PD's affinity groups in line with what the done
// job j changed. It runs in the job's finish step: an error (PD
// unreachable) retries the step.
func (d *DDL) syncAffinity(ctx context.Context, j *Job) error {
	pd, ok := d.store.(kv.AffinityAdmin)
	if !ok || j.State != StateDone {
		return nil
	}
	var add, remove []int64
	switch j.Type {
	case ActionDropTable:
		remove = []int64{j.TableID}
	case ActionDropSchema:
		return d.reconcileAffinity(ctx)
	case ActionTruncateTable:
		remove = []int64{j.TableID}
		fallthrough
	case ActionCreateTable, ActionAlterTableOptions:
		db, err := d.cat.GetDB(ctx, j.SchemaName)
		if err != nil {
			return err
		}
		d.cat.Reload(db, j.TableName)
		t, err := d.cat.GetTable(ctx, db, j.TableName)
		switch {
		case code(err) == errno.ErrNoSuchTable:
			// Gone again: nothing to add (the reconciliation removes
			// what is left).
		case err != nil:
			return err
		case t.Affinity != "":
			add = []int64{t.ID}
		case j.Type == ActionAlterTableOptions:
			remove = append(remove, t.ID)
		}
	default:
		return nil
	}
	if len(add)+len(remove) == 0 {
		return nil
	}
	if err := pd.SetAffinityTables(ctx, add, remove); err != nil {
		affinitySyncs.WithLabelValues("error").Inc()
		return fmt.Errorf("ddl: telling PD the affinity groups of %s.%s: %w", j.SchemaName, j.TableName, err)
	}
	affinitySyncs.WithLabelValues("ok").Inc()
	d.log.Info("ddl: affinity groups changed", "job", j.ID, "table", j.SchemaName+"."+j.TableName, "add", add, "remove", remove)
	return nil
}

// reconcileAffinity makes PD's affinity groups hold every table whose
// AFFINITY option is set, and no table that no longer exists. Groups of
// existing tables added through PD's HTTP API are left alone.
func (d *DDL) reconcileAffinity(ctx context.Context) error {
	pd, ok := d.store.(kv.AffinityAdmin)
	if !ok {
		return nil
	}
	dbs, err := d.cat.ListDBs(ctx)
	if err != nil {
		return err
	}
	exists := map[int64]bool{}
	var want []int64
	for _, db := range dbs {
		tables, err := d.cat.ListTables(ctx, db)
		if err != nil {
			return err
		}
		for _, t := range tables {
			exists[t.ID] = true
			if t.Affinity != "" {
				want = append(want, t.ID)
			}
		}
	}
	groups, err := pd.AffinityGroups(ctx, nil)
	if err != nil {
		return err
	}
	var have, remove []int64
	for _, g := range groups {
		have = append(have, g.TableID)
		if !exists[g.TableID] {
			remove = append(remove, g.TableID)
		}
	}
	add := slices.DeleteFunc(want, func(id int64) bool { return slices.Contains(have, id) })
	if len(add)+len(remove) == 0 {
		return nil
	}
	if err := pd.SetAffinityTables(ctx, add, remove); err != nil {
		affinitySyncs.WithLabelValues("error").Inc()
		return err
	}
	affinitySyncs.WithLabelValues("reconciled").Inc()
	d.log.Info("ddl: affinity groups reconciled with the catalog", "added", add, "removed", remove)
	return nil
}
