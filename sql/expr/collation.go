package expr

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/collate"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/types"
)

// Coercibility values, as MySQL's COERCIBILITY() reports them: when two
// strings of different collations meet, the lower value wins.
const (
	CoercibilityExplicit  = 0 // COLLATE
	CoercibilityNone      = 1 // already a mix of collations
	CoercibilityImplicit  = 2 // a column
	CoercibilitySysconst  = 3 // USER(), DATABASE(), ...
	CoercibilityCoercible = 4 // a literal
	CoercibilityNumeric   = 5 // a number or temporal
	CoercibilityIgnorable = 6 // NULL
)

// Collation returns the collation a string of type ft compares under when
// it is not bytewise (nil: utf8mb4_bin, binary and the other _bin
// collations, and every non-string type). Values of a column whose type
// has one are stored in index keys as its sort key.
func Collation(ft types.FieldType) *collate.Collation {
	if ft.Coll == 0 {
		return nil
	}
	id := ft.Collation()
	if id == types.CollationUTF8MB4 || id == types.CollationBinary {
		return nil
	}
	if c := collate.ByID(id); c != nil && !c.Binary() {
		return c
	}
	return nil
}

// collateExpr is `e COLLATE name`: e's value under another collation.
type collateExpr struct {
	e  Expr
	ft types.FieldType
}

func (e *collateExpr) Eval(row []types.Datum) (types.Datum, error) { return e.e.Eval(row) }
func (e *collateExpr) Type() types.FieldType                       { return e.ft }

// compileCollate compiles `e COLLATE name`: 1273 for an unknown
// collation, 1253 for one of another character set than e's.
func compileCollate(x *ast.SetCollationExpr, c *Ctx) (Expr, error) {
	e, err := Compile(x.Expr, c)
	if err != nil {
		return nil, err
	}
	coll := collate.ByName(x.Collate)
	if coll == nil {
		return nil, errno.New(errno.ErrUnknownCollation, "Unknown collation: '%s'", x.Collate)
	}
	ft := e.Type()
	cs := collate.Of(ft.Collation()).Charset
	if ft.Class() != types.ClassString || ft.Tp == mysql.TypeNull {
		cs = "utf8mb4" // a number or temporal converts to a utf8mb4 string
	}
	if cs != coll.Charset {
		return nil, errno.New(errno.ErrCollationCharsetMismatch, "COLLATION '%s' is not valid for CHARACTER SET '%s'", coll.Name, cs)
	}
	if ft.Class() != types.ClassString {
		ft = types.VarcharType
	}
	ft.Coll = coll.ID
	if coll.ID == types.CollationUTF8MB4 {
		ft.Coll = 0
	}
	return &collateExpr{e: e, ft: ft}, nil
}

// Coercibility is e's coercibility (COERCIBILITY(e)).
func Coercibility(e Expr) int {
	ft := e.Type()
	switch x := e.(type) {
	case *collateExpr:
		return CoercibilityExplicit
	case *Column:
		if ft.Class() == types.ClassString {
			return CoercibilityImplicit
		}
	case *Constant:
		if x.Value.IsNull() || ft.Tp == mysql.TypeNull {
			return CoercibilityIgnorable
		}
		if ft.Class() == types.ClassString {
			return CoercibilityCoercible
		}
	default:
		// A function's or cast's string result: implicit when it has a
		// collation of its own (from its arguments) or is binary (BINARY
		// 'Ann' and CAST(x AS BINARY), so name = BINARY 'Ann' compares
		// bytewise, as in MySQL), or is a CAST or CONVERT, else coercible
		// like a literal.
		if ft.Class() == types.ClassString && ft.Tp != mysql.TypeNull {
			if f, ok := e.(*funcExpr); ok && (f.name == "cast" || f.name == "convert") {
				return CoercibilityImplicit
			}
			if ft.Coll != 0 || ft.Binary() {
				return CoercibilityImplicit
			}
			return CoercibilityCoercible
		}
	}
	return CoercibilityNumeric
}

// compareCollation is the collation two string operands of op compare
// under, by MySQL's coercibility rules: the operand of lower coercibility
// wins; of equal coercibility and different collations, a binary string
// wins, else ERROR 1267. Nil is bytewise.
func compareCollation(op string, l, r Expr) (*collate.Collation, error) {
	lt, rt := l.Type(), r.Type()
	if lt.Coll == 0 && rt.Coll == 0 {
		return nil, nil // the common case: both utf8mb4_bin or not text
	}
	lc, rc := Coercibility(l), Coercibility(r)
	lid, rid := lt.Collation(), rt.Collation()
	if lc == CoercibilityNumeric || lc == CoercibilityIgnorable {
		lid = rid
	}
	if rc == CoercibilityNumeric || rc == CoercibilityIgnorable {
		rid = lid
	}
	id := lid
	switch {
	case lid == rid:
	case lc < rc:
	case rc < lc:
		id = rid
	case lid == types.CollationBinary || rid == types.CollationBinary:
		id = types.CollationBinary
	default:
		return nil, errIllegalMix(lid, lc, rid, rc, op)
	}
	if c := collate.ByID(id); c != nil && !c.Binary() {
		return c, nil
	}
	return nil, nil
}

func errIllegalMix(lid uint16, lc int, rid uint16, rc int, op string) error {
	return errno.New(errno.ErrIllegalMixOfCollations, "Illegal mix of collations (%s,%s) and (%s,%s) for operation '%s'",
		collate.Of(lid).Name, coercibilityName(lc), collate.Of(rid).Name, coercibilityName(rc), op)
}

func coercibilityName(c int) string {
	switch c {
	case CoercibilityExplicit:
		return "EXPLICIT"
	case CoercibilityNone:
		return "NONE"
	case CoercibilityImplicit:
		return "IMPLICIT"
	case CoercibilitySysconst:
		return "SYSCONST"
	case CoercibilityNumeric:
		return "NUMERIC"
	case CoercibilityIgnorable:
		return "IGNORABLE"
	}
	return "COERCIBLE"
}

// CompareWith compares two non-NULL values as a comparison compiled with
// byBytes and coll does (coll from PairCollation; nil: bytewise).
func CompareWith(a, b types.Datum, byBytes bool, coll *collate.Collation) int {
	return compareHow(a, b, byBytes, false, false, coll)
}

// PairCollation is the collation two string operands of types l and r
// compare under when the caller has no expressions to weigh (a subquery's
// column): l's non-binary collation, else r's, else nil (bytewise).
func PairCollation(l, r types.FieldType) *collate.Collation {
	if c := Collation(l); c != nil {
		return c
	}
	return Collation(r)
}

// listCollation is the collation of e compared with every item of list
// (IN, CASE x WHEN): the items are checked pairwise with e.
func listCollation(op string, e Expr, list []Expr) (*collate.Collation, error) {
	var out *collate.Collation
	for _, x := range list {
		c, err := compareCollation(op, e, x)
		if err != nil {
			return nil, err
		}
		if c != nil {
			out = c
		}
	}
	return out, nil
}
