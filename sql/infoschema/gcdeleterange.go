package infoschema

import (
	"context"
	"encoding/hex"
	"time"

	"github.com/stratadb/strata/sql/deleterange"
)

// gcDeleteRangeTable is STRATA_GC_DELETE_RANGE: the key ranges dropped
// tables and indexes left (TiDB's mysql.gc_delete_range and
// gc_delete_range_done in one table), pending ones first, then the ones the
// GC leader deleted. A pending range is deleted once the GC safe point
// passes the drop (tidb_gc_life_time after it).
func gcDeleteRangeTable(s *Schema) *memTable {
	return table("STRATA_GC_DELETE_RANGE", s.gcDeleteRanges,
		col{"JOB_ID", notNull(bigint)}, col{"ELEMENT_ID", notNull(bigint)}, col{"OBJECT", notNull(varchar(64))},
		col{"START_KEY", notNull(varchar(256))}, col{"END_KEY", notNull(varchar(256))}, col{"TS", notNull(bigintU)},
		col{"STATE", notNull(varchar(8))}, col{"DONE_TIME", dt})
}

func (s *Schema) gcDeleteRanges(ctx context.Context, _ Viewer) ([][]datum, error) {
	st := s.cat.Store()
	ts, err := st.GetTS(ctx)
	if err != nil {
		return nil, err
	}
	pending, err := deleterange.Pending(ctx, st, ts, 0)
	if err != nil {
		return nil, err
	}
	done, err := deleterange.Done(ctx, st, ts, 0)
	if err != nil {
		return nil, err
	}
	rows := make([][]datum, 0, len(pending)+len(done))
	for _, r := range append(pending, done...) {
		state, doneAt := str("pending"), null
		if r.DoneMs != 0 {
			state, doneAt = str("done"), str(time.UnixMilli(r.DoneMs).Format(time.DateTime))
		}
		rows = append(rows, []datum{num(r.JobID), num(r.ElementID), str(r.What), str(hex.EncodeToString(r.StartKey)),
			str(hex.EncodeToString(r.EndKey)), unum(r.TS), state, doneAt})
	}
	return rows, nil
}
