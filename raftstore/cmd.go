package raftstore

import (
	"bytes"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
)

// A normal raft entry's data is a marshalled raft_cmdpb.RaftCmdRequest (an
// empty entry is a new leader's no-op). Nothing else is ever proposed as a
// normal entry: transaction logic runs before proposing, apply only writes.

// encodeCmd marshals cmd as the data of a raft entry.
func encodeCmd(cmd *raft_cmdpb.RaftCmdRequest) ([]byte, error) {
	data, err := proto.Marshal(cmd)
	if err != nil {
		return nil, fmt.Errorf("raftstore: marshal raft command: %w", err)
	}
	return data, nil
}

// decodeCmd unmarshals a normal entry's data.
func decodeCmd(data []byte) (*raft_cmdpb.RaftCmdRequest, error) {
	cmd := &raft_cmdpb.RaftCmdRequest{}
	if err := proto.Unmarshal(data, cmd); err != nil {
		// Entries written by builds before the RaftCmdRequest format
		// (kind byte 0x01 | id | OnePCRequest) fail here too.
		return nil, fmt.Errorf("%w: raft command: %v", ErrCorrupt, err)
	}
	return cmd, nil
}

// Field numbers read by entryProposalID (see proto/raft_cmdpb.proto).
const (
	fieldCmdHeader        protowire.Number = 1 // RaftCmdRequest.header
	fieldHeaderProposalID protowire.Number = 5 // RaftRequestHeader.proposal_id
)

// entryProposalID returns header.proposal_id of an entry's command without
// unmarshalling the whole command (it runs for every entry a leader
// persists). ok is false for an empty or undecodable entry or an id of 0.
func entryProposalID(data []byte) (id uint64, ok bool) {
	header, found := protoField(data, fieldCmdHeader, protowire.BytesType)
	if !found {
		return 0, false
	}
	v, found := protoField(header, fieldHeaderProposalID, protowire.VarintType)
	if !found {
		return 0, false
	}
	id, n := protowire.ConsumeVarint(v)
	return id, n > 0 && id != 0
}

// protoField returns the raw value of the last occurrence of field num
// with wire type typ in the message b (for BytesType, the bytes; for
// VarintType, the varint's encoding).
func protoField(b []byte, num protowire.Number, typ protowire.Type) (val []byte, found bool) {
	for len(b) > 0 {
		n, t, tagLen := protowire.ConsumeTag(b)
		if tagLen < 0 {
			return nil, false
		}
		b = b[tagLen:]
		valLen := protowire.ConsumeFieldValue(n, t, b)
		if valLen < 0 {
			return nil, false
		}
		if n == num && t == typ {
			val, found = b[:valLen], true
			if typ == protowire.BytesType {
				v, m := protowire.ConsumeBytes(b)
				if m < 0 {
					return nil, false
				}
				val = v
			}
		}
		b = b[valLen:]
	}
	return val, found
}

// checkCmdEpoch re-checks a command's epoch against the region as it is at
// apply time (the same on every replica at the same index): a data command
// needs the region's current version (a split or merge since it was
// proposed moves keys to another region); an admin command the current
// conf_ver, and Split the version as well; CompactLog only truncates the
// local log and is never refused (as in TiKV). nil means the command may
// execute.
func checkCmdEpoch(cmd *raft_cmdpb.RaftCmdRequest, region *metapb.Region) *errorpb.Error {
	req := cmd.GetHeader().GetRegionEpoch()
	cur := region.GetRegionEpoch()
	admin := cmd.GetAdminRequest()
	if admin.GetCmdType() == raft_cmdpb.AdminCmdType_CompactLog {
		return nil
	}
	if req == nil {
		return errEpochNotMatch(region) // every proposal carries an epoch (Propose checks)
	}
	if admin != nil {
		if req.GetConfVer() != cur.GetConfVer() {
			return errEpochNotMatch(region)
		}
		if admin.GetCmdType() == raft_cmdpb.AdminCmdType_Split && req.GetVersion() != cur.GetVersion() {
			return errEpochNotMatch(region)
		}
		return nil
	}
	if req.GetVersion() != cur.GetVersion() {
		return errEpochNotMatch(region)
	}
	return nil
}

// checkCmdKeys checks at propose time that every request is well-formed and
// its keys lie inside region. Keys are cf keys: the user key is recovered
// by decoding (all three key spaces start with the memcomparable user key).
func checkCmdKeys(cmd *raft_cmdpb.RaftCmdRequest, region *metapb.Region) *errorpb.Error {
	for _, r := range cmd.GetRequests() {
		switch r.GetCmdType() {
		case raft_cmdpb.CmdType_Put, raft_cmdpb.CmdType_Delete:
			if e := checkCFKeyInRegion(r.GetCf(), r.GetKey(), region); e != nil {
				return e
			}
		case raft_cmdpb.CmdType_DeleteRange:
			if e := checkCFKeyInRegion(r.GetCf(), r.GetKey(), region); e != nil {
				return e
			}
			if bytes.Compare(r.GetKey(), r.GetEndKey()) >= 0 {
				return &errorpb.Error{Message: fmt.Sprintf("delete range [%x, %x) is empty or reversed", r.GetKey(), r.GetEndKey())}
			}
			// The end must not pass the region's end in the cf.
			if end := region.GetEndKey(); len(end) > 0 {
				_, hi := keys.CFBounds(r.GetCf(), region.GetStartKey(), end)
				if bytes.Compare(keys.EngineKey(nil, r.GetCf(), r.GetEndKey()), hi) > 0 {
					return &errorpb.Error{
						Message: fmt.Sprintf("delete range end %x beyond region %d", r.GetEndKey(), region.GetId()),
						KeyNotInRegion: &errorpb.KeyNotInRegion{Key: r.GetEndKey(), RegionId: region.GetId(),
							StartKey: region.GetStartKey(), EndKey: region.GetEndKey()},
					}
				}
			}
		default:
			return &errorpb.Error{Message: fmt.Sprintf("invalid command type %v", r.GetCmdType())}
		}
	}
	return nil
}

// checkCFKeyInRegion reports KeyNotInRegion when the engine key of cfKey
// falls outside region's bounds in cf.
func checkCFKeyInRegion(cf raft_cmdpb.CF, cfKey []byte, region *metapb.Region) *errorpb.Error {
	lo, hi := keys.CFBounds(cf, region.GetStartKey(), region.GetEndKey())
	k := keys.EngineKey(nil, cf, cfKey)
	if bytes.Compare(k, lo) >= 0 && bytes.Compare(k, hi) < 0 {
		return nil
	}
	return &errorpb.Error{
		Message: fmt.Sprintf("key %x of %v not in region %d", cfKey, cf, region.GetId()),
		KeyNotInRegion: &errorpb.KeyNotInRegion{Key: cfKey, RegionId: region.GetId(),
			StartKey: region.GetStartKey(), EndKey: region.GetEndKey()},
	}
}

// applyWrites writes cmd's requests into b. It evaluates nothing: the
// layer above decided what to write before proposing. keyBuf is scratch
// space for engine keys (returned, possibly grown).
func applyWrites(b *pebble.Batch, cmd *raft_cmdpb.RaftCmdRequest, keyBuf []byte) ([]byte, error) {
	for _, r := range cmd.GetRequests() {
		keyBuf = keys.EngineKey(keyBuf[:0], r.GetCf(), r.GetKey())
		var err error
		switch r.GetCmdType() {
		case raft_cmdpb.CmdType_Put:
			err = b.Set(keyBuf, r.GetValue(), nil)
		case raft_cmdpb.CmdType_Delete:
			err = b.Delete(keyBuf, nil)
		case raft_cmdpb.CmdType_DeleteRange:
			err = b.DeleteRange(keyBuf, keys.EngineKey(nil, r.GetCf(), r.GetEndKey()), nil)
		default:
			err = fmt.Errorf("%w: command type %v", ErrCorrupt, r.GetCmdType())
		}
		if err != nil {
			return keyBuf, err
		}
	}
	return keyBuf, nil
}
