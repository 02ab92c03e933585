package execdetails

import "time"

// StoreTimes is the store's side of one KV RPC: its stages (indexed by
// Stage - FirstStoreStage; 0 where the store reported none) and the
// store's total time on it.
type StoreTimes struct {
	Total  time.Duration
	Stages [NumStages - FirstStoreStage]time.Duration
}

// Set sets stage s (a store stage) to d.
func (t *StoreTimes) Set(s Stage, d time.Duration) { t.Stages[s-FirstStoreStage] = d }

// Get returns stage s (a store stage).
func (t *StoreTimes) Get(s Stage) time.Duration { return t.Stages[s-FirstStoreStage] }

// storeOrder is the order the store runs its stages in, each entry the
// stage and the stage it nests in at the same start (none: NumStages).
var storeOrder = [...]struct{ s, in Stage }{
	{StoreWait, NumStages}, {StoreLatchWait, NumStages}, {StoreReadIndex, NumStages}, {StoreCMWait, NumStages},
	{StoreProcess, NumStages}, {StoreKVRead, StoreProcess},
	{RaftPropose, NumStages}, {RaftCommitLog, NumStages}, {RaftPersistLog, RaftCommitLog}, {RaftApply, NumStages},
}

// Store adds the store's side t of one RPC attempt that began at start
// and took d on the client. When tracing, each of its stages becomes a
// span inside the RPC's: the store's time is centred in the RPC's (the
// network's share split evenly between the two ways) and its stages laid
// out in the order the store runs them, a nested one (Pebble reads in
// processing, the fsync in the commit) at its parent's start; every span
// ends by the RPC's end. No-op on nil.
func (x *Details) Store(start time.Time, d time.Duration, t *StoreTimes) {
	if x == nil {
		return
	}
	for i, v := range t.Stages {
		if v > 0 {
			x.ns[FirstStoreStage+Stage(i)].Add(int64(v))
		}
	}
	if !x.tracing.Load() {
		return
	}
	total := t.Total
	var seq time.Duration
	for _, o := range storeOrder {
		if o.in == NumStages {
			seq += t.Get(o.s)
		}
	}
	total = max(total, seq)
	end := start.Add(d)
	at := start.Add(max(d-total, 0) / 2)
	var began [NumStages]time.Time
	for _, o := range storeOrder {
		v := t.Get(o.s)
		if v <= 0 {
			continue
		}
		from := at
		if o.in != NumStages {
			from = began[o.in]
			if from.IsZero() {
				from = at
			}
		} else {
			at = at.Add(v)
		}
		began[o.s] = from
		if from.After(end) {
			from = end
		}
		x.record(Span{Name: names[o.s], Dur: min(v, end.Sub(from))}, from)
	}
}

// IsStore reports whether s is one of the store's stages.
func (s Stage) IsStore() bool { return s >= FirstStoreStage && s < NumStages }

// Slowest names the stage of stages (a statement's time per stage) an
// operator should look at first, or NumStages when all are 0: the
// slowest of the SQL node's stages, unless the slowest store stage
// accounts for at least half of it, which is then named (a commit slow
// because of the raft apply is raft_apply, not commit).
func Slowest(stages *[NumStages]time.Duration) Stage {
	client, store := NumStages, NumStages
	for st := range NumStages {
		v := stages[st]
		if v <= 0 {
			continue
		}
		if st.IsStore() {
			if store == NumStages || v > stages[store] {
				store = st
			}
		} else if client == NumStages || v > stages[client] {
			client = st
		}
	}
	switch {
	case client == NumStages:
		return store
	case store != NumStages && 2*stages[store] >= stages[client]:
		return store
	}
	return client
}
