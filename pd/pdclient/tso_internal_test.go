package pdclient

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/proto/pdpb"
	"github.com/stratadb/strata/tso"
)

func batchOf(n int) *tsoBatch {
	b := &tsoBatch{}
	for range n {
		b.reqs = append(b.reqs, &tsoReq{done: make(chan struct{}, 1)})
	}
	return b
}

func tsoResp(phys, logical int64, count uint32, typ pdpb.ErrorType) *pdpb.TsoResponse {
	r := &pdpb.TsoResponse{Header: &pdpb.ResponseHeader{}, Count: count, Timestamp: &pdpb.Timestamp{Physical: phys, Logical: logical}}
	if typ != pdpb.ErrorType_OK {
		r.Header.Error = &pdpb.Error{Type: typ, Message: "x"}
	}
	return r
}

func TestDeliver(t *testing.T) {
	c := &Client{log: slog.Default()}
	for _, tc := range []struct {
		name     string
		n        int
		resp     *pdpb.TsoResponse
		wantErr  error
		wantLast uint64
	}{
		{"first batch", 3, tsoResp(100, 10, 3, pdpb.ErrorType_OK), nil, tso.ComposeTS(100, 10)},
		{"next batch", 2, tsoResp(100, 12, 2, pdpb.ErrorType_OK), nil, tso.ComposeTS(100, 12)},
		{"overlapping batch", 2, tsoResp(100, 13, 2, pdpb.ErrorType_OK), ErrTSOBackwards, tso.ComposeTS(100, 12)},
		{"backwards", 1, tsoResp(99, 500, 1, pdpb.ErrorType_OK), ErrTSOBackwards, tso.ComposeTS(100, 12)},
		{"not leader", 1, tsoResp(0, 0, 1, pdpb.ErrorType_NOT_LEADER), ErrTSOUnavailable, tso.ComposeTS(100, 12)},
		{"count mismatch", 2, tsoResp(200, 5, 1, pdpb.ErrorType_OK), ErrTSOUnavailable, tso.ComposeTS(100, 12)},
		{"new millisecond", 4, tsoResp(101, 4, 4, pdpb.ErrorType_OK), nil, tso.ComposeTS(101, 4)},
	} {
		b := batchOf(tc.n)
		reqs := append([]*tsoReq(nil), b.reqs...)
		b.floor = c.maxTS.Load()
		err := c.deliver(b, tc.resp)
		require.Equal(t, tc.wantLast, c.maxTS.Load(), tc.name)
		for i, r := range reqs {
			<-r.done
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr, tc.name)
				require.ErrorIs(t, r.err, tc.wantErr, tc.name)
				require.Zero(t, r.ts)
				continue
			}
			require.NoError(t, err, tc.name)
			require.NoError(t, r.err)
			require.Equal(t, tc.wantLast-uint64(tc.n-1-i), r.ts, tc.name)
		}
	}
}

// TestDeliverOutOfOrder: in parallel mode a batch sent before another may be
// answered after it with lower timestamps; that is fine (its callers began
// before the other batch's answer), as long as it is above everything
// delivered before it was sent.
func TestDeliverOutOfOrder(t *testing.T) {
	c := &Client{log: slog.Default()}
	early, late := batchOf(2), batchOf(3)
	early.floor, late.floor = c.maxTS.Load(), c.maxTS.Load() // both sent now
	require.NoError(t, c.deliver(late, tsoResp(100, 10, 3, pdpb.ErrorType_OK)))
	require.NoError(t, c.deliver(early, tsoResp(100, 5, 2, pdpb.ErrorType_OK)))
	require.Equal(t, tso.ComposeTS(100, 10), c.maxTS.Load(), "max never moves back")

	// A batch sent after both answers must be above them.
	next := batchOf(1)
	next.floor = c.maxTS.Load()
	require.ErrorIs(t, c.deliver(next, tsoResp(100, 9, 1, pdpb.ErrorType_OK)), ErrTSOBackwards)
}

func TestParseTSOMode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want TSOMode
		err  bool
	}{
		{"default", TSOModeDefault, false},
		{"", TSOModeDefault, false},
		{"PARALLEL", TSOModeParallel, false},
		{"parallel-4", 0, true},
	} {
		got, err := ParseTSOMode(tc.in)
		if tc.err {
			require.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
		require.Equal(t, got, must(ParseTSOMode(got.String())))
	}
	o := options{tsoMode: TSOModeParallel}
	require.Equal(t, DefaultTSOParallelStreams, o.streams())
	WithTSOStreams(7)(&o)
	require.Equal(t, 7, o.streams())
	WithTSOMode(TSOModeDefault)(&o)
	require.Equal(t, 1, o.streams(), "default mode always has one stream")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
