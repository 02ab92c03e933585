package storetest

import (
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/proto/metapb"
)

// What a cluster does to the clients of its regions, simulated over the
// one engine: leaders move, PD lags behind or fails, a node goes away, a
// peer is removed. See the package doc.

// leadership is who leads each region: region id N is led by store
// N mod stores + 1 unless SetLeader said otherwise; PD may report a stale
// leader.
type leadership struct {
	stores uint64

	mu     sync.Mutex
	leader map[uint64]uint64 // region id → leading store (0: none)
	noHint map[uint64]bool   // region id → NotLeader carries no leader
	pd     map[uint64]uint64 // region id → the store PD says leads it
}

// leaderStore is the store leading region id (0: none).
func (l *leadership) leaderStore(id uint64) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st, ok := l.leader[id]; ok {
		return st
	}
	return id%l.stores + 1
}

// peerOn returns r's peer on store st, or nil.
func peerOn(r *metapb.Region, st uint64) *metapb.Peer {
	for _, p := range r.GetPeers() {
		if p.GetStoreId() == st {
			return p
		}
	}
	return nil
}

// leaderPeer is memengine's Leader: the peer of r that leads it, nil
// while it has none.
func (l *leadership) leaderPeer(r *metapb.Region) *metapb.Peer {
	return peerOn(r, l.leaderStore(r.GetId()))
}

// hint is memengine's Hint: the leader the other peers name in NotLeader.
func (l *leadership) hint(r *metapb.Region) *metapb.Peer {
	l.mu.Lock()
	hide := l.noHint[r.GetId()]
	l.mu.Unlock()
	if hide {
		return nil
	}
	return l.leaderPeer(r)
}

// pdLeader is the leader PD reports for r (a copy), nil when it knows
// none.
func (l *leadership) pdLeader(r *metapb.Region) *metapb.Peer {
	l.mu.Lock()
	st, stale := l.pd[r.GetId()]
	l.mu.Unlock()
	if !stale {
		st = l.leaderStore(r.GetId())
	}
	if p := peerOn(r, st); p != nil {
		return proto.Clone(p).(*metapb.Peer)
	}
	return nil
}

// SetLeader moves the leadership of region regionID to its peer on store
// storeID (0: no leader, an election in progress). The other peers then
// answer NotLeader, naming the new leader when hint is true (as followers
// that heard from it do) and nobody otherwise; PD reports the new leader
// unless SetPDLeader holds it back. The leadership gained makes writes
// proposed before it StaleCommand, and the new leader syncs max_ts with
// PD before its next async-commit or 1PC prewrite.
func (s *Store) SetLeader(regionID, storeID uint64, hint bool) {
	if storeID != 0 {
		r := s.eng.RegionByID(regionID)
		if r == nil || peerOn(r, storeID) == nil {
			panic(fmt.Sprintf("storetest: region %d has no peer on store %d", regionID, storeID))
		}
	}
	l := s.lead
	l.mu.Lock()
	l.leader[regionID] = storeID
	if hint {
		delete(l.noHint, regionID)
	} else {
		l.noHint[regionID] = true
	}
	l.mu.Unlock()
	s.eng.BumpLeaderGeneration()
}

// Leader is the store leading region regionID (0: none).
func (s *Store) Leader(regionID uint64) uint64 { return s.lead.leaderStore(regionID) }

// SetPDLeader makes PD report the peer on store storeID as the leader of
// region regionID whoever leads it (a PD that has not had the heartbeat
// of a leader change yet; 0: no leader known), until ClearPDLeader.
func (s *Store) SetPDLeader(regionID, storeID uint64) {
	l := s.lead
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pd[regionID] = storeID
}

// ClearPDLeader makes PD report region regionID's real leader again.
func (s *Store) ClearPDLeader(regionID uint64) {
	l := s.lead
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.pd, regionID)
}

// SetPDError makes PD's region lookups (GetRegion, GetRegionByID,
// ScanRegions) fail with err from now on; nil: answer again.
func (s *Store) SetPDError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pdErr = err
}

// PDCalls is how many region lookups of method ("GetRegion",
// "GetRegionByID", "ScanRegions") PD received, failed ones included.
func (s *Store) PDCalls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pdCalls[method]
}

// pdCall counts a PD region lookup and returns the error set by
// SetPDError.
func (s *Store) pdCall(method string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pdCalls == nil {
		s.pdCalls = map[string]int{}
	}
	s.pdCalls[method]++
	return s.pdErr
}

// NodeCalls is how many requests of method store node storeID received
// (Calls counts those of every node).
func (s *Store) NodeCalls(storeID uint64, method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nodeCalls[nodeMethod{storeID, method}]
}

// Addr is store node storeID's gRPC address.
func (s *Store) Addr(storeID uint64) string { return s.nodes[storeID-1].lis.Addr().String() }

// StopNode stops store node storeID as a store that went away: its
// listener closes (new connections are refused) and its connections
// break. PD still reports its address, and it keeps its peers and
// leaderships until SetLeader moves them.
func (s *Store) StopNode(storeID uint64) { s.nodes[storeID-1].gs.Stop() }

// RemovePeer removes region regionID's peer on store storeID, as a conf
// change does (conf_ver + 1): that node answers RegionNotFound for the
// region from then on. Move the leadership away first if it led.
func (s *Store) RemovePeer(regionID, storeID uint64) {
	r := s.eng.RegionByID(regionID)
	if r == nil {
		panic(fmt.Sprintf("storetest: no region %d", regionID))
	}
	var peers []*metapb.Peer
	for _, p := range r.GetPeers() {
		if p.GetStoreId() != storeID {
			peers = append(peers, p)
		}
	}
	r.Peers = peers
	r.RegionEpoch.ConfVer++
	s.eng.SetRegion(r)
}
