package server

// Connection ids are global: they name the SQL node that owns the
// connection, so KILL on any node finds it (TiDB's global kill). The
// layout is TiDB's 32-bit form:
//
//	 31          21 20                      1    0
//	+--------------+-------------------------+------+
//	|  server id   |     local conn id       |markup|
//	|    (11b)     |         (20b)           |  =0  |
//	+--------------+-------------------------+------+
//
// The whole id fits the 4-byte connection id of the handshake, so clients
// that keep only those 4 bytes (the mysql CLI's Ctrl+C sends KILL QUERY
// with it; many drivers store it in an int32/uint32) name the right
// connection. TiDB's 64-bit form (markup 1, 22-bit server id, 40-bit local
// id) serves clusters of more than 2047 SQL nodes, which Strata does not
// aim at, and the handshake would truncate it; it is not implemented, and
// an id with the markup bit set or above 32 bits is unknown (1094).
//
// Server id 0 means the node is not registered with PD (a node on its own,
// the package's tests): its ids are plain local ids and it kills only
// locally. Local ids are reused only after 2^20-1 newer connections and
// never while the connection holding one is open (connIDs skips them).
const (
	connIDLocalBits  = 20
	connIDServerBits = 11
	maxLocalConnID   = 1<<connIDLocalBits - 1
	// MaxServerID is the largest server id the layout holds (PD hands out
	// 1..MaxServerID).
	MaxServerID = 1<<connIDServerBits - 1
)

// makeConnID lays out server id and local id (both in range).
func makeConnID(serverID, local uint64) uint64 {
	return serverID<<(connIDLocalBits+1) | local<<1
}

// splitConnID is makeConnID's inverse; ok is false for an id that is not
// of the 32-bit form (markup bit set, or above 32 bits) or has local id 0.
func splitConnID(id uint64) (serverID, local uint64, ok bool) {
	if id>>32 != 0 || id&1 != 0 {
		return 0, 0, false
	}
	local = id >> 1 & maxLocalConnID
	return id >> (connIDLocalBits + 1), local, local != 0
}

// connIDs hands out local connection ids 1..maxLocalConnID in a cycle,
// skipping those still in use. Not safe for concurrent use (the server
// calls it under its mutex).
type connIDs struct{ last uint64 }

// next returns a local id for which inUse is false, or false when all
// 2^20-1 are in use.
func (a *connIDs) next(inUse func(local uint64) bool) (uint64, bool) {
	for range maxLocalConnID {
		a.last++
		if a.last > maxLocalConnID {
			a.last = 1
		}
		if !inUse(a.last) {
			return a.last, true
		}
	}
	return 0, false
}
