package domain

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv"
)

// noStore panics on every call: New must not reach the cluster.
type noStore struct{ kv.Storage }

func TestNewReadsNothingAndWiresItsParts(t *testing.T) {
	d := New(Config{Store: noStore{}, Addr: "127.0.0.1:4000"})
	require.NotNil(t, d.Catalog())
	require.NotNil(t, d.DDL())
	require.NotNil(t, d.Stats())
	require.NotNil(t, d.IDs())
	require.NotNil(t, d.AutoInc())
	require.NotNil(t, d.Privileges())
	require.True(t, d.InfoSchema().IsSystemDB("INFORMATION_SCHEMA"))
	require.Equal(t, noStore{}, d.Store())
}
