package expr

import (
	"github.com/stratadb/strata/sql/types"
)

// AppendGroupKey appends the grouping / DISTINCT key of vals to b: equal
// keys for values GROUP BY puts together (numbers by value, NULL distinct
// from ""; strings and DECIMAL text as bytes). The SQL node and the stores'
// partial aggregation group by it, so both group alike.
func AppendGroupKey(b []byte, vals []types.Datum) []byte {
	for _, v := range vals {
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
		default:
			b = append(b, 2)
			b = append(b, v.Bytes()...)
		}
		b = append(b, 0xFF, 0)
	}
	return b
}
