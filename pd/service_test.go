package pd

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/proto/pdpb"
)

func TestNotLeaderAnswers(t *testing.T) {
	sv := &service{s: &Server{}}
	ctx := context.Background()
	a, err := sv.AllocID(ctx, &pdpb.AllocIDRequest{})
	require.NoError(t, err)
	require.Equal(t, pdpb.ErrorType_NOT_LEADER, a.Header.Error.Type)
	g, err := sv.GetRegion(ctx, &pdpb.GetRegionRequest{})
	require.NoError(t, err)
	require.Equal(t, pdpb.ErrorType_NOT_LEADER, g.Header.Error.Type)
	p, err := sv.PutStore(ctx, &pdpb.PutStoreRequest{})
	require.NoError(t, err)
	require.Equal(t, pdpb.ErrorType_NOT_LEADER, p.Header.Error.Type)
}
