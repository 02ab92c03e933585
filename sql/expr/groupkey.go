package expr

import (
	"github.com/stratadb/strata/sql/collate"
	"github.com/stratadb/strata/sql/types"
)

// AppendGroupKey appends the grouping / DISTINCT key of vals to b: equal
// keys for values GROUP BY puts together (numbers by value, NULL distinct
// from ""; strings and DECIMAL text as bytes; JSON numbers by value, other
// JSON values by their encoding). The SQL node and the stores'
// partial aggregation group by it, so both group alike.
func AppendGroupKey(b []byte, vals []types.Datum) []byte {
	return AppendGroupKeyColl(b, vals, nil)
}

// AppendGroupKeyColl is AppendGroupKey with the strings of vals[i] keyed
// by colls[i]'s sort key when colls[i] is set (a non-binary collation:
// 'Ann' and 'ann' group together under utf8mb4_general_ci). colls may be
// nil (all bytewise) or as long as vals.
func AppendGroupKeyColl(b []byte, vals []types.Datum, colls []*collate.Collation) []byte {
	for i, v := range vals {
		if v.IsNull() {
			b = append(b, 0)
			continue
		}
		switch v.Kind() {
		case types.KindInt64, types.KindUint64, types.KindFloat64:
			b = append(b, 1)
			f, _ := types.ToFloat(v)
			if v.Kind() != types.KindFloat64 && (f > 1<<53 || f < -(1<<53)) {
				b = types.AppendText(b, v, nil)
			} else {
				b = types.AppendFloat(b, f, 64)
			}
		case types.KindJSON:
			// JSON numbers group by value (1 with 1.0), as they compare;
			// anything else by its encoding.
			if j := v.JSON(); j.Tp == types.JSONInt || j.Tp == types.JSONUint || j.Tp == types.JSONDouble || j.Tp == types.JSONDecimal {
				n := types.JSONToDatum(j)
				if j.Tp == types.JSONDecimal {
					f, _ := types.JSONToFloat(j)
					n = types.NewFloat(f)
				}
				b = AppendGroupKey(append(b, 3), []types.Datum{n})
			} else {
				b = append(b, 4)
				b = append(b, v.Bytes()...)
			}
		default:
			b = append(b, 2)
			if colls != nil && colls[i] != nil {
				b = colls[i].Key(b, v.Bytes())
			} else {
				b = append(b, v.Bytes()...)
			}
		}
		b = append(b, 0xFF, 0)
	}
	return b
}

// Collations returns the collation of each expression's type (Collation),
// or nil when every one is bytewise, for AppendGroupKeyColl.
func Collations(es []Expr) []*collate.Collation {
	var out []*collate.Collation
	for i, e := range es {
		if c := Collation(e.Type()); c != nil {
			if out == nil {
				out = make([]*collate.Collation, len(es))
			}
			out[i] = c
		}
	}
	return out
}
