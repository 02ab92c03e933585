package schedule

import (
	"time"

	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
)

// StoreState is a store's state as PD's API shows it.
type StoreState int

// Store states, in PD's names.
const (
	StoreUp StoreState = iota
	StoreDisconnected
	StoreDown
	StoreOffline
	StoreTombstone
)

var storeStateNames = [...]string{"Up", "Disconnected", "Down", "Offline", "Tombstone"}

func (s StoreState) String() string { return storeStateNames[s] }

// StoreInfo is PD's view of one store. Immutable once stored in a Cluster
// (updates replace it).
type StoreInfo struct {
	Meta          *metapb.Store
	Stats         *pdpb.StoreStats // nil before the first heartbeat
	LastHeartbeat time.Time        // the term start for stores loaded from etcd
}

// State derives the store's state at now under cfg.
func (s *StoreInfo) State(now time.Time, cfg *Config) StoreState {
	switch s.Meta.GetState() {
	case metapb.StoreState_Tombstone:
		return StoreTombstone
	case metapb.StoreState_Offline:
		return StoreOffline
	}
	age := now.Sub(s.LastHeartbeat)
	switch {
	case age >= cfg.MaxStoreDownTime.D():
		return StoreDown
	case age >= cfg.DisconnectTime.D():
		return StoreDisconnected
	}
	return StoreUp
}

// placeable reports whether new replicas may go to the store.
func (s StoreState) placeable() bool { return s == StoreUp }

// healthy reports whether a replica on the store counts toward the region's
// replicas (a Disconnected store may come back; Down, Offline and Tombstone
// stores' replicas are replaced).
func (s StoreState) healthy() bool { return s == StoreUp || s == StoreDisconnected }
