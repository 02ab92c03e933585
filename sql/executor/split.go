package executor

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

// SPLIT TABLE and SHOW TABLE ... REGIONS, with TiDB's semantics:
//
//	SPLIT TABLE t BETWEEN (lo) AND (hi) REGIONS n   n regions over handles [lo, hi)
//	SPLIT TABLE t BY (v1), (v2), ...                 a region starting at each handle
//	SPLIT TABLE t INDEX idx BETWEEN (..) AND (..) REGIONS n / BY (..), ...
//
// A table with indexes also gets a boundary at its record prefix (rows and
// index entries in different regions); an index split also splits at the
// index's first and past its last key. The answer is TOTAL_SPLIT_REGION
// (regions created) and SCATTER_FINISH_RATIO (1: regions are not
// scattered, so nothing is pending).

const (
	maxSplitRegions = 1000 // TiDB's maxSplitRegionNum
	minSplitStep    = 1000 // TiDB's minRegionStepValue for integer handles
)

func (e *Executor) regionAdmin() (kv.RegionAdmin, error) {
	a, ok := e.dom.Store().(kv.RegionAdmin)
	if !ok {
		return nil, errno.NotSupported("region splits on this storage")
	}
	return a, nil
}

// Split runs SPLIT TABLE / SPLIT TABLE ... INDEX for the session env.
func (e *Executor) Split(ctx context.Context, x *ast.SplitRegionStmt, env StmtEnv) (*Result, error) {
	if len(x.PartitionNames) > 0 {
		return nil, errno.NotSupported("SPLIT PARTITION")
	}
	admin, err := e.regionAdmin()
	if err != nil {
		return nil, err
	}
	t, err := e.showTable(ctx, env, x.Table, "")
	if err != nil {
		return nil, err
	}
	opt := x.SplitOpt
	if opt == nil {
		return nil, errno.New(errno.ErrParse, "SPLIT TABLE needs BETWEEN ... AND ... REGIONS n or BY (...)")
	}
	var keys [][]byte
	if x.IndexName.L == "" {
		keys, err = e.tableSplitKeys(env, t, opt)
	} else {
		ix := t.FindIndex(x.IndexName.O)
		if ix == nil || !ix.Public() {
			return nil, errno.New(errno.ErrKeyDoesNotExist, "Key '%s' doesn't exist in table '%s'", x.IndexName.O, t.Name)
		}
		keys, err = e.indexSplitKeys(env, t, ix, opt)
	}
	if err != nil {
		return nil, err
	}
	n, err := admin.SplitRegions(ctx, keys)
	if err != nil {
		return nil, err
	}
	ratio := 1.0
	if n == 0 {
		ratio = 0
	}
	return &Result{
		Columns: []ResultColumn{IntColumn("TOTAL_SPLIT_REGION"), {Name: "SCATTER_FINISH_RATIO", OrgName: "SCATTER_FINISH_RATIO", Type: types.DoubleType}},
		Rows:    [][]types.Datum{{types.NewInt(int64(n)), types.NewFloat(ratio)}},
	}, nil
}

// splitValues evaluates one parenthesised value list, converting each value
// to its column's type.
func (e *Executor) splitValues(env StmtEnv, list []ast.ExprNode, cols []types.FieldType, what string) ([]types.Datum, error) {
	if len(list) == 0 || len(list) > len(cols) {
		return nil, errno.New(errno.ErrWrongValueCount, "Split %s: %d values for %d columns", what, len(list), len(cols))
	}
	out := make([]types.Datum, len(list))
	for i, e := range list {
		ce, err := expr.Compile(e, &expr.Ctx{Env: env, Clause: "split region"})
		if err != nil {
			return nil, err
		}
		d, err := ce.Eval(nil)
		if err != nil {
			return nil, err
		}
		if out[i], err = cols[i].Convert(d); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (e *Executor) handleValue(env StmtEnv, t *model.TableInfo, list []ast.ExprNode) (int64, error) {
	ft := types.Int64Type
	if t.PKIsHandle {
		ft = t.Columns[t.HandleOffset].Type
	}
	v, err := e.splitValues(env, list, []types.FieldType{ft}, "table `"+t.Name+"`")
	if err != nil {
		return 0, err
	}
	if v[0].IsNull() {
		return 0, errno.New(errno.ErrInvalidSplitRegionRanges, "Failed to split region ranges: the handle value is NULL")
	}
	return v[0].Int64(), nil
}

func (e *Executor) tableSplitKeys(env StmtEnv, t *model.TableInfo, opt *ast.SplitOption) ([][]byte, error) {
	var keys [][]byte
	if slices.ContainsFunc(t.Indices, t.HasEntries) { // the rows apart from the index entries
		keys = append(keys, tablecodec.AppendRecordPrefix(nil, t.ID))
	}
	if t.CommonHandle {
		return e.commonSplitKeys(env, t, opt, keys)
	}
	if len(opt.ValueLists) > 0 {
		for _, list := range opt.ValueLists {
			h, err := e.handleValue(env, t, list)
			if err != nil {
				return nil, err
			}
			keys = append(keys, tablecodec.RowKey(t.ID, h))
		}
		return keys, nil
	}
	if err := checkSplitNum(opt.Num); err != nil {
		return nil, err
	}
	lo, err := e.handleValue(env, t, opt.Lower)
	if err != nil {
		return nil, err
	}
	hi, err := e.handleValue(env, t, opt.Upper)
	if err != nil {
		return nil, err
	}
	if lo >= hi {
		return nil, errno.New(errno.ErrInvalidSplitRegionRanges,
			"Failed to split region ranges: Split table `%s` region lower value %d should less than the upper value %d", t.Name, lo, hi)
	}
	step := uint64(hi-lo) / uint64(opt.Num)
	if step < minSplitStep {
		return nil, errno.New(errno.ErrInvalidSplitRegionRanges,
			"Failed to split region ranges: Split table `%s` region step value should more than %d, step %d is invalid", t.Name, minSplitStep, step)
	}
	for i := range opt.Num {
		keys = append(keys, tablecodec.RowKey(t.ID, lo+int64(uint64(i)*step)))
	}
	return keys, nil
}

// commonSplitKeys adds to keys the row keys of SPLIT TABLE on a table
// keyed by a clustered PRIMARY KEY of any type: each BY list gives the
// key's values (or its first ones); BETWEEN ... AND ... REGIONS n splits
// evenly between the two keys' encodings, as for an index.
func (e *Executor) commonSplitKeys(env StmtEnv, t *model.TableInfo, opt *ast.SplitOption, keys [][]byte) ([][]byte, error) {
	pk := t.PrimaryIndex()
	key := func(list []ast.ExprNode) ([]byte, error) {
		if len(list) > len(pk.Columns) {
			return nil, errno.New(errno.ErrInvalidSplitRegionRanges, "Failed to split region ranges: the number of values %d exceeds the %d columns of the PRIMARY KEY", len(list), len(pk.Columns))
		}
		cols := make([]types.FieldType, len(list))
		for i := range list {
			cols[i] = t.Columns[pk.Columns[i].Offset].Type
		}
		vals, err := e.splitValues(env, list, cols, "table `"+t.Name+"`")
		if err != nil {
			return nil, err
		}
		for i, v := range vals {
			if v.IsNull() {
				return nil, errno.New(errno.ErrInvalidSplitRegionRanges, "Failed to split region ranges: the handle value is NULL")
			}
			vals[i] = model.IndexColumnDatum(cols[i], v, pk.Columns[i].Length)
		}
		return t.CommonHandleKey(tablecodec.AppendRecordPrefix(nil, t.ID), vals), nil
	}
	return splitByKeys(opt, keys, key, "table `"+t.Name+"`")
}

// splitByKeys adds to keys the split keys of opt, key encoding one list
// of values: each BY list's, or BETWEEN ... AND ... REGIONS n split
// evenly between the two keys' encodings. what names the object for the
// errors ("table `t`", "index `i`").
func splitByKeys(opt *ast.SplitOption, keys [][]byte, key func([]ast.ExprNode) ([]byte, error), what string) ([][]byte, error) {
	if len(opt.ValueLists) > 0 {
		for _, list := range opt.ValueLists {
			k, err := key(list)
			if err != nil {
				return nil, err
			}
			keys = append(keys, k)
		}
		return keys, nil
	}
	if err := checkSplitNum(opt.Num); err != nil {
		return nil, err
	}
	lo, err := key(opt.Lower)
	if err != nil {
		return nil, err
	}
	hi, err := key(opt.Upper)
	if err != nil {
		return nil, err
	}
	if bytes.Compare(lo, hi) >= 0 {
		return nil, errno.New(errno.ErrInvalidSplitRegionRanges,
			"Failed to split region ranges: Split %s region lower value %s should less than the upper value %s", what, exprList(opt.Lower), exprList(opt.Upper))
	}
	return append(keys, interpolateKeys(lo, hi, int(opt.Num))...), nil
}

func checkSplitNum(n int64) error {
	switch {
	case n < 1:
		return errno.New(errno.ErrInvalidSplitRegionRanges, "Failed to split region ranges: Split table region num should more than 0")
	case n > maxSplitRegions:
		return errno.New(errno.ErrInvalidSplitRegionRanges, "Failed to split region ranges: Split table region num exceeded the limit %d", maxSplitRegions)
	}
	return nil
}

func (e *Executor) indexSplitKeys(env StmtEnv, t *model.TableInfo, ix *model.IndexInfo, opt *ast.SplitOption) ([][]byte, error) {
	cols := make([]types.FieldType, len(ix.Columns))
	for i, c := range ix.Columns {
		cols[i] = t.Columns[c.Offset].Type
	}
	what := "index `" + ix.Name + "`"
	start, end := tablecodec.IndexRange(t.ID, ix.ID)
	keys := [][]byte{start, end}
	key := func(list []ast.ExprNode) ([]byte, error) {
		vals, err := e.splitValues(env, list, cols, what)
		if err != nil {
			return nil, err
		}
		return tablecodec.AppendIndexKey(nil, t.ID, ix.ID, vals, false, tablecodec.Handle{}), nil
	}
	return splitByKeys(opt, keys, key, what)
}

// interpolateKeys returns n keys from lo, evenly spaced up to hi in the 8
// bytes after their common prefix (TiDB's getValuesList).
func interpolateKeys(lo, hi []byte, n int) [][]byte {
	p := 0
	for p < len(lo) && p < len(hi) && lo[p] == hi[p] {
		p++
	}
	word := func(k []byte) uint64 {
		var b [8]byte
		copy(b[:], k[min(p, len(k)):])
		return binary.BigEndian.Uint64(b[:])
	}
	l, h := word(lo), word(hi)
	step := (h - l) / uint64(n)
	out := [][]byte{lo}
	if step == 0 {
		return out
	}
	for i := 1; i < n; i++ {
		k := append([]byte(nil), lo[:p]...)
		out = append(out, binary.BigEndian.AppendUint64(k, l+uint64(i)*step))
	}
	return out
}

func exprList(list []ast.ExprNode) string {
	var b strings.Builder
	for i, e := range list {
		if i > 0 {
			b.WriteString(",")
		}
		var sb strings.Builder
		if err := e.Restore(format.NewRestoreCtx(format.DefaultRestoreFlags, &sb)); err == nil {
			b.WriteString(sb.String())
		}
	}
	return b.String()
}

// showRegions is SHOW TABLE t [INDEX idx] REGIONS: the regions overlapping
// the table (or the index), as PD last heard of them.
func (e *Executor) showRegions(ctx context.Context, env StmtEnv, x *ast.ShowStmt) (*Result, error) {
	admin, err := e.regionAdmin()
	if err != nil {
		return nil, err
	}
	t, err := e.showTable(ctx, env, x.Table, x.DBName)
	if err != nil {
		return nil, err
	}
	start, end := tablecodec.TableRange(t.ID)
	if x.IndexName.L != "" {
		ix := t.FindIndex(x.IndexName.O)
		if ix == nil || !ix.Public() {
			return nil, errno.New(errno.ErrKeyDoesNotExist, "Key '%s' doesn't exist in table '%s'", x.IndexName.O, t.Name)
		}
		start, end = tablecodec.IndexRange(t.ID, ix.ID)
	}
	regions, err := admin.ScanRegions(ctx, start, end)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: []ResultColumn{
		IntColumn("REGION_ID"), StringColumn("START_KEY", 1024), StringColumn("END_KEY", 1024), IntColumn("LEADER_ID"), IntColumn("LEADER_STORE_ID"),
		StringColumn("PEERS", 1024), IntColumn("SCATTERING"), IntColumn("WRITTEN_BYTES"), IntColumn("READ_BYTES"),
		IntColumn("APPROXIMATE_SIZE(MB)"), IntColumn("APPROXIMATE_KEYS"),
	}}
	for _, r := range regions {
		peers := make([]string, len(r.PeerIDs))
		for i, id := range r.PeerIDs {
			peers[i] = fmt.Sprint(id)
		}
		res.Rows = append(res.Rows, []types.Datum{
			types.NewInt(int64(r.ID)), types.NewString(regionKeyString(r.StartKey)), types.NewString(regionKeyString(r.EndKey)),
			types.NewInt(int64(r.LeaderID)), types.NewInt(int64(r.LeaderStoreID)), types.NewString(strings.Join(peers, ", ")),
			types.NewInt(0), types.NewInt(int64(r.WrittenBytes)), types.NewInt(int64(r.ReadBytes)),
			types.NewInt(int64(max(1, (r.ApproximateSize+(1<<19))>>20))), types.NewInt(int64(r.ApproximateKeys)),
		})
	}
	return res, nil
}

// regionKeyString shows a region boundary as TiDB does: t_{tid}_r_{handle}
// for a row key, t_{tid}_i_{iid}_{hex of the values} for an index key,
// t_{tid}_r / t_{tid}_ for prefixes, else the key in hex.
func regionKeyString(k []byte) string {
	if len(k) == 0 {
		return ""
	}
	tid, ok := tablecodec.TableIDOf(k)
	if !ok {
		return fmt.Sprintf("%X", k)
	}
	if _, h, err := tablecodec.DecodeRowKey(k); err == nil {
		return fmt.Sprintf("t_%d_r_%d", tid, h)
	}
	rp := tablecodec.AppendRecordPrefix(nil, tid)
	if bytes.Equal(k, rp) {
		return fmt.Sprintf("t_%d_r", tid)
	}
	if bytes.HasPrefix(k, rp) {
		return fmt.Sprintf("t_%d_r_%X", tid, k[len(rp):])
	}
	if tablecodec.IsIndexKey(k) {
		iid := tablecodec.IndexIDOf(k)
		ip := tablecodec.AppendIndexPrefix(nil, tid, iid)
		return fmt.Sprintf("t_%d_i_%d_%X", tid, iid, k[len(ip):])
	}
	tp := tablecodec.AppendTablePrefix(nil, tid)
	return fmt.Sprintf("t_%d_%X", tid, k[len(tp):])
}
