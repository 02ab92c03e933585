package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// The GC safe point this store knows (store/gc): reads below it are refused.
// GC deletes the versions below a safe point through raft commands that
// carry it (RaftCmdRequest.gc_safe_point), so every replica that applies
// the deletes, including one whose store never heard of the safe point from
// PD, raises its known safe point in the same apply pass, before the batch
// with the deletes is committed: a read that takes its engine snapshot and
// then checks GCSafePoint therefore never sees a deletion without its safe
// point. A snapshot of a region carries the sender's known safe point
// (taken after the engine snapshot it is cut from), raised by the receiver
// in its install batch, before the files are ingested. Both are persisted
// in the same batch (gcSafePointKey), so a restarted store refuses the same
// reads before its first PD poll.

// GCSafePoint is the newest GC safe point this store knows: polled from PD
// (RaiseGCSafePoint) or learned through raft. Safe for concurrent use.
func (s *Store) GCSafePoint() uint64 { return s.gcSafePoint.Load() }

// RaiseGCSafePoint raises GCSafePoint to sp (never lowers it) and reports
// whether it rose; the GC worker calls it with each safe point it polls.
// Not persisted: only a safe point data was collected under here must
// survive a restart, and the batch that collected persists it.
func (s *Store) RaiseGCSafePoint(sp uint64) bool {
	for {
		cur := s.gcSafePoint.Load()
		if sp <= cur {
			return false
		}
		if s.gcSafePoint.CompareAndSwap(cur, sp) {
			return true
		}
	}
}

// learnGCSafePoint raises the known safe point to sp and writes it into
// b, the batch whose commit makes data collected under sp visible (loop
// only). from names the source for the log and metric.
func (s *Store) learnGCSafePoint(b *pebble.Batch, sp uint64, from string) error {
	if sp == 0 {
		return nil
	}
	if s.RaiseGCSafePoint(sp) {
		gcSafePointLearned.WithLabelValues(from).Inc()
		s.log.Info("gc safe point learned through raft", "safe_point", sp, "from", from)
	}
	// The current value, not sp: never persist a lower one than an earlier
	// batch did.
	return b.Set(gcSafePointKey(), binary.BigEndian.AppendUint64(nil, s.gcSafePoint.Load()), nil)
}

// loadGCSafePoint restores the persisted safe point (Open).
func (s *Store) loadGCSafePoint() error {
	v, closer, err := s.db.Get(gcSafePointKey())
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("raftstore: read gc safe point: %w", err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return fmt.Errorf("%w: gc safe point of %d bytes", ErrCorrupt, len(v))
	}
	s.RaiseGCSafePoint(binary.BigEndian.Uint64(v))
	return nil
}
