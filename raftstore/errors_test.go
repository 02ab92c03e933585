package raftstore

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/proto/metapb"
)

func TestEpochMatches(t *testing.T) {
	r := &metapb.Region{RegionEpoch: &metapb.RegionEpoch{ConfVer: 2, Version: 3}}
	require.True(t, epochMatches(&metapb.RegionEpoch{ConfVer: 2, Version: 3}, r))
	require.False(t, epochMatches(&metapb.RegionEpoch{ConfVer: 1, Version: 3}, r))
	require.False(t, epochMatches(&metapb.RegionEpoch{ConfVer: 2, Version: 4}, r))
	require.True(t, epochMatches(nil, r))
}
