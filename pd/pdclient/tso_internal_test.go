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
	var last uint64
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
		err := c.deliver(b, tc.resp, &last)
		require.Equal(t, tc.wantLast, last, tc.name)
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
