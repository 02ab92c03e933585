package session

import (
	"context"
	"errors"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/catalog"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/executor"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/types"
)

func (s *Session) createTable(ctx context.Context, x *ast.CreateTableStmt) (*executor.Result, error) {
	switch {
	case x.ReferTable != nil:
		return nil, errno.NotSupported("CREATE TABLE ... LIKE")
	case x.Select != nil:
		return nil, errno.NotSupported("CREATE TABLE ... SELECT")
	case x.Partition != nil:
		return nil, errno.NotSupported("partitioned tables")
	case x.TemporaryKeyword != ast.TemporaryNone:
		return nil, errno.NotSupported("temporary tables")
	}
	db, err := s.dbFor(ctx, x.Table.Schema.O)
	if err != nil {
		return nil, err
	}
	t, err := BuildTableInfo(x, s)
	if err != nil {
		return nil, err
	}
	if err := s.cat.CreateTable(ctx, db, t, x.IfNotExists); err != nil {
		return nil, err
	}
	for _, o := range x.Options {
		// AUTO_INCREMENT=N: the first automatic value is N (the table is
		// new, so the stored bound is raised to N-1 before any insert).
		if o.Tp == ast.TableOptionAutoIncrement && o.UintValue > 1 && t.AutoIncOffset >= 0 {
			if err := s.exec.AutoInc.Rebase(ctx, t.ID, int64(min(o.UintValue-1, 1<<62))); err != nil {
				return nil, err
			}
		}
	}
	return &executor.Result{}, nil
}

// BuildTableInfo validates a CREATE TABLE and converts it to a TableInfo
// (without an id).
func BuildTableInfo(x *ast.CreateTableStmt, env expr.Env) (*catalog.TableInfo, error) {
	t := &catalog.TableInfo{Name: x.Table.Name.O, HandleOffset: -1, AutoIncOffset: -1}
	if len(x.Cols) == 0 {
		return nil, errno.New(errno.ErrTableMustHaveCols, "A table must have at least 1 column")
	}
	if len(t.Name) > 64 {
		return nil, errno.New(1103, "Incorrect table name '%s'", t.Name)
	}
	pk := -1
	setPK := func(off int) error {
		if pk >= 0 {
			return errno.New(errno.ErrMultiplePriKey, "Multiple primary key defined")
		}
		pk = off
		return nil
	}
	names := map[string]bool{}
	var uniqCols []string // columns declared UNIQUE
	for i, cd := range x.Cols {
		name := cd.Name.Name.O
		if names[strings.ToLower(name)] {
			return nil, errno.New(errno.ErrDupFieldName, "Duplicate column name '%s'", name)
		}
		if strings.EqualFold(name, catalog.HandleColumnName) {
			return nil, errno.New(errno.ErrWrongFieldSpec, "Incorrect column name '%s': the name is reserved for the hidden row handle", name)
		}
		names[strings.ToLower(name)] = true
		ft, err := types.FromAST(cd.Tp)
		if errors.Is(err, types.ErrBitWidth) {
			return nil, errno.New(errno.ErrTooBigDisplayWidth, "Display width out of range for column '%s' (max = 64)", name)
		}
		if err != nil {
			return nil, errno.NotSupported(err.Error())
		}
		c := &catalog.ColumnInfo{ID: int64(i + 1), Name: name, Offset: i, Type: ft}
		var defExpr ast.ExprNode
		for _, o := range cd.Options {
			switch o.Tp {
			case ast.ColumnOptionPrimaryKey:
				if err := setPK(i); err != nil {
					return nil, err
				}
			case ast.ColumnOptionNotNull:
				c.Type.Flag |= mysql.NotNullFlag
			case ast.ColumnOptionNull:
				c.Type.Flag &^= mysql.NotNullFlag
			case ast.ColumnOptionAutoIncrement:
				if c.Type.Class() != types.ClassInt && c.Type.Class() != types.ClassFloat {
					return nil, errno.New(errno.ErrWrongFieldSpec, "Incorrect column specifier for column '%s'", name)
				}
				if t.AutoIncOffset >= 0 {
					return nil, errno.New(errno.ErrWrongAutoKey, "Incorrect table definition; there can be only one auto column and it must be defined as a key")
				}
				c.AutoIncrement = true
				c.Type.Flag |= mysql.AutoIncrementFlag
				t.AutoIncOffset = i
			case ast.ColumnOptionDefaultValue:
				defExpr = o.Expr
			case ast.ColumnOptionUniqKey:
				uniqCols = append(uniqCols, name)
			case ast.ColumnOptionComment, ast.ColumnOptionCollate, ast.ColumnOptionColumnFormat, ast.ColumnOptionStorage, ast.ColumnOptionReference, ast.ColumnOptionNoOption:
				// No effect on storage or semantics Strata implements.
			case ast.ColumnOptionOnUpdate:
				return nil, errno.NotSupported("ON UPDATE CURRENT_TIMESTAMP")
			case ast.ColumnOptionGenerated:
				return nil, errno.NotSupported("generated columns")
			case ast.ColumnOptionCheck:
				return nil, errno.NotSupported("CHECK constraints")
			default:
				return nil, errno.NotSupported("this column option")
			}
		}
		if defExpr != nil {
			if err := setDefault(c, defExpr, env); err != nil {
				return nil, err
			}
		}
		t.Columns = append(t.Columns, c)
	}
	t.Init() // name lookups for the constraints; Init runs again below
	for _, con := range x.Constraints {
		switch con.Tp {
		case ast.ConstraintPrimaryKey:
			if len(con.Keys) != 1 || con.Keys[0].Column == nil {
				return nil, errno.NotSupported("composite PRIMARY KEY (needs secondary indexes)")
			}
			off := -1
			for i, c := range t.Columns {
				if strings.EqualFold(c.Name, con.Keys[0].Column.Name.O) {
					off = i
				}
			}
			if off < 0 {
				return nil, errno.New(1072, "Key column '%s' doesn't exist in table", con.Keys[0].Column.Name.O)
			}
			if err := setPK(off); err != nil {
				return nil, err
			}
		case ast.ConstraintCheck:
			return nil, errno.NotSupported("CHECK constraints")
		case ast.ConstraintForeignKey:
			return nil, errno.NotSupported("FOREIGN KEY")
		case ast.ConstraintIndex, ast.ConstraintKey, ast.ConstraintUniq, ast.ConstraintUniqKey, ast.ConstraintUniqIndex:
			unique := con.Tp == ast.ConstraintUniq || con.Tp == ast.ConstraintUniqKey || con.Tp == ast.ConstraintUniqIndex
			if err := addIndexInfo(t, con.Name, con.Keys, unique, con.Option); err != nil {
				return nil, err
			}
		case ast.ConstraintFulltext, ast.ConstraintVector, ast.ConstraintColumnar:
			return nil, errno.NotSupported("FULLTEXT / VECTOR / COLUMNAR indexes")
		default:
			return nil, errno.NotSupported("this table constraint")
		}
	}
	for _, c := range uniqCols {
		spec := []*ast.IndexPartSpecification{{Column: &ast.ColumnName{Name: ast.NewCIStr(c)}}}
		if err := addIndexInfo(t, "", spec, true, nil); err != nil {
			return nil, err
		}
	}
	if pk >= 0 {
		c := t.Columns[pk]
		if c.Type.Class() != types.ClassInt {
			return nil, errno.NotSupported("non-integer PRIMARY KEY (needs a clustered index on it)")
		}
		c.Type.Flag |= mysql.PriKeyFlag | mysql.NotNullFlag
		if c.HasDefault && c.DefaultNull {
			return nil, errno.New(errno.ErrInvalidDefault, "Invalid default value for '%s'", c.Name)
		}
		t.PKIsHandle, t.HandleOffset = true, pk
	}
	if t.AutoIncOffset >= 0 && t.AutoIncOffset != pk {
		return nil, errno.New(errno.ErrWrongAutoKey, "Incorrect table definition; there can be only one auto column and it must be defined as a key")
	}
	for _, o := range x.Options {
		if o.Tp == ast.TableOptionComment {
			t.Comment = o.StrValue
		}
	}
	t.Init()
	return t, nil
}

func setDefault(c *catalog.ColumnInfo, n ast.ExprNode, env expr.Env) error {
	invalid := errno.New(errno.ErrInvalidDefault, "Invalid default value for '%s'", c.Name)
	if f, ok := n.(*ast.FuncCallExpr); ok {
		switch f.FnName.L {
		case "current_timestamp", "now", "localtime", "localtimestamp":
			if c.Type.Class() != types.ClassTime || c.Type.Tp == mysql.TypeDate {
				return invalid
			}
			c.HasDefault, c.DefaultNow = true, true
			return nil
		}
	}
	e, err := expr.Compile(n, &expr.Ctx{Env: env})
	if err != nil {
		return invalid
	}
	v, err := e.Eval(nil)
	if err != nil {
		return invalid
	}
	c.HasDefault = true
	if v.IsNull() {
		if c.Type.NotNull() {
			return invalid
		}
		c.DefaultNull = true
		return nil
	}
	if c.AutoIncrement {
		return invalid
	}
	d, err := c.Type.Convert(v)
	if err != nil {
		return invalid
	}
	if c.Type.Class() == types.ClassFloat {
		c.Default = string(types.AppendFloat(nil, d.Float64(), 64))
	} else if c.Type.Tp == mysql.TypeBit {
		c.Default = string(types.AppendText(nil, d, &c.Type)) // its bytes, read back by Convert
	} else {
		c.Default = string(types.AppendText(nil, d, nil))
	}
	return nil
}
