package infoschema

import (
	"context"

	"github.com/stratadb/strata/sql/model"
)

// CHECK_CONSTRAINTS (MySQL 8.0.16+): one row per CHECK constraint, its
// expression as SHOW CREATE TABLE prints it; TABLE_CONSTRAINTS lists them
// too, with CONSTRAINT_TYPE CHECK and whether they are ENFORCED.
func checkConstraintsTable(s *Schema) *memTable {
	return table("CHECK_CONSTRAINTS", s.checkConstraints,
		col{"CONSTRAINT_CATALOG", name64}, col{"CONSTRAINT_SCHEMA", name64}, col{"CONSTRAINT_NAME", varchar(64)},
		col{"CHECK_CLAUSE", notNull(ltext)})
}

func (s *Schema) checkConstraints(ctx context.Context, v Viewer) ([][]datum, error) {
	var rows [][]datum
	err := s.eachTable(ctx, v, func(db string, t *model.TableInfo) error {
		for _, c := range t.Checks {
			rows = append(rows, []datum{str("def"), str(db), str(c.Name), str(c.Expr)})
		}
		return nil
	})
	return rows, err
}

// checkConstraintRows are t's rows of TABLE_CONSTRAINTS.
func checkConstraintRows(db string, t *model.TableInfo) [][]datum {
	var rows [][]datum
	for _, c := range t.Checks {
		enforced := "YES"
		if !c.Enforced {
			enforced = "NO"
		}
		rows = append(rows, []datum{str("def"), str(db), str(c.Name), str(db), str(t.Name), str("CHECK"), str(enforced)})
	}
	return rows
}
