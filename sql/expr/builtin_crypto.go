package expr

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"hash"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/types"
)

// Hash, encoding and random functions: MD5, SHA1 / SHA, SHA2, UNHEX,
// TO_BASE64, FROM_BASE64, UUID and RAND. Digests are lower-case hex
// strings; decoders return binary strings and NULL for input that does not
// decode. UUID and RAND are evaluated per row, never folded (the planner's
// nonDeterministic list).

var cryptoBuiltins = map[string]builtin{
	"md5":         {1, 1, buildDigest},
	"sha1":        {1, 1, buildDigest},
	"sha":         {1, 1, buildDigest},
	"sha2":        {2, 2, buildSHA2},
	"unhex":       {1, 1, buildUnhex},
	"to_base64":   {1, 1, buildToBase64},
	"from_base64": {1, 1, buildFromBase64},
	"uuid":        {0, 0, buildUUID},
	"rand":        {0, 1, buildRand},
}

// binType is a VARBINARY result of at most n bytes (-1: unknown).
func binType(n int) types.FieldType {
	ft := strType(n)
	ft.Flag |= mysql.BinaryFlag
	return ft
}

// hexDigest is the lower-case hex text of h over s.
func hexDigest(h hash.Hash, s []byte) types.Datum {
	h.Write(s)
	var sum [sha512.Size]byte
	return types.NewBytes(hex.AppendEncode(nil, h.Sum(sum[:0])))
}

// buildDigest compiles MD5(s) (32 hex digits) and SHA1(s) / SHA(s) (40).
func buildDigest(name string, args []Expr) (Expr, error) {
	newHash, n := sha1.New, 40
	if name == "md5" {
		newHash, n = md5.New, 32
	}
	return &funcExpr{name: name, args: args, ft: strType(n), fn: func(a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		return hexDigest(newHash(), textOf(a[0])), nil
	}}, nil
}

// buildSHA2 compiles SHA2(s, bits): bits 224, 256 (or 0), 384 or 512;
// any other length is NULL, as MySQL returns (with a warning).
func buildSHA2(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: strType(128), fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		var h hash.Hash
		switch intOf(a[1]) {
		case 224:
			h = sha256.New224()
		case 0, 256:
			h = sha256.New()
		case 384:
			h = sha512.New384()
		case 512:
			h = sha512.New()
		default:
			return types.NullDatum, nil
		}
		return hexDigest(h, textOf(a[0])), nil
	}}, nil
}

// buildUnhex compiles UNHEX(s): the bytes of pairs of hex digits (an odd
// count is read with a leading 0); NULL when s has a non-hex character.
// A number is read as its decimal text (UNHEX(123) is 0x0123), as MySQL
// does.
func buildUnhex(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: binType((argFlen(args[0]) + 1) / 2), fn: func(a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		s := textOf(a[0])
		out := make([]byte, (len(s)+1)/2)
		src := s
		if len(s)%2 == 1 {
			src = append([]byte{'0'}, s...)
		}
		if _, err := hex.Decode(out, src); err != nil {
			return types.NullDatum, nil
		}
		return types.NewBytes(out), nil
	}}, nil
}

// base64Line is the length of TO_BASE64's lines: MySQL breaks its output
// with a newline every 76 characters.
const base64Line = 76

func buildToBase64(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: strType(-1), fn: func(a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		enc := base64.StdEncoding.EncodeToString(textOf(a[0]))
		out := make([]byte, 0, len(enc)+len(enc)/base64Line)
		for len(enc) > base64Line {
			out = append(append(out, enc[:base64Line]...), '\n')
			enc = enc[base64Line:]
		}
		return types.NewBytes(append(out, enc...)), nil
	}}, nil
}

// buildFromBase64 compiles FROM_BASE64(s): spaces and line breaks are
// skipped (TO_BASE64's lines decode); anything that is not base64 is
// NULL.
func buildFromBase64(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: binType(-1), fn: func(a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		s := textOf(a[0])
		clean := make([]byte, 0, len(s))
		for _, c := range s {
			switch c {
			case ' ', '\t', '\n', '\r':
			default:
				clean = append(clean, c)
			}
		}
		out := make([]byte, base64.StdEncoding.DecodedLen(len(clean)))
		n, err := base64.StdEncoding.Decode(out, clean)
		if err != nil {
			return types.NullDatum, nil
		}
		return types.NewBytes(out[:n]), nil
	}}, nil
}

// uuidEpoch is the UUID time origin, 1582-10-15, in Unix 100 ns ticks.
const uuidEpoch = 0x01B21DD213814000

// uuidNode is this process's random node id (the multicast bit set, as
// RFC 4122 asks of a node that is no MAC address) and clock sequence.
var uuidNode = sync.OnceValue(func() (n [8]byte) {
	_, _ = rand.Read(n[:])
	n[2] |= 0x01 // multicast bit of the node's first byte (n[2:8] is the node)
	return n
})

// uuidClock hands out strictly increasing timestamps, so two UUIDs of one
// process never repeat.
var uuidClock struct {
	sync.Mutex
	last uint64
}

// buildUUID compiles UUID(): a version 1 (time-based) UUID as MySQL
// returns, aaaaaaaa-bbbb-1ccc-dddd-eeeeeeeeeeee.
func buildUUID(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: strType(36), fn: func([]types.Datum) (types.Datum, error) {
		return types.NewBytes(newUUID()), nil
	}}, nil
}

func newUUID() []byte {
	ts := uint64(time.Now().UnixNano()/100) + uuidEpoch
	uuidClock.Lock()
	if ts <= uuidClock.last {
		ts = uuidClock.last + 1
	}
	uuidClock.last = ts
	uuidClock.Unlock()
	node := uuidNode()
	var u [16]byte
	binary.BigEndian.PutUint32(u[0:], uint32(ts))
	binary.BigEndian.PutUint16(u[4:], uint16(ts>>32))
	binary.BigEndian.PutUint16(u[6:], uint16(ts>>48)&0x0fff|0x1000)
	u[8] = node[0]&0x3f | 0x80 // variant 10, clock sequence
	u[9] = node[1]
	copy(u[10:], node[2:8])
	out := make([]byte, 0, 36)
	for i, part := range [][]byte{u[0:4], u[4:6], u[6:8], u[8:10], u[10:16]} {
		if i > 0 {
			out = append(out, '-')
		}
		out = hex.AppendEncode(out, part)
	}
	return out
}

// mysqlRand is MySQL's random number generator (my_rnd): RAND(N)
// returns the same sequence as MySQL's for the same seed.
type mysqlRand struct {
	mu           sync.Mutex
	seed1, seed2 uint64
}

const randMax = 0x3FFFFFFF

// seed is MySQL's Item_func_rand::seed_random for the seed value n.
func (r *mysqlRand) seed(n int64) {
	t := uint32(n)
	r.seed1 = uint64(t*0x10001+55555555) % randMax
	r.seed2 = uint64(t*0x10000001) % randMax
}

func (r *mysqlRand) next() float64 {
	r.seed1 = (r.seed1*3 + r.seed2) % randMax
	r.seed2 = (r.seed1 + r.seed2 + 33) % randMax
	return float64(r.seed1) / randMax
}

// buildRand compiles RAND() (a uniform value in [0, 1) per row) and
// RAND(N): with a constant N, a sequence seeded once per statement (each
// row takes the next value, as MySQL's); with a column, seeded again by
// each row's value. A NULL seed is 0. Only a literal or a parameter counts
// as constant here: RAND(1 + 1) is seeded again per row, where MySQL
// would seed it once.
func buildRand(name string, args []Expr) (Expr, error) {
	if len(args) == 0 {
		return &funcExpr{name: name, ft: types.DoubleType, fn: func([]types.Datum) (types.Datum, error) {
			return types.NewFloat(mrand.Float64()), nil
		}}, nil
	}
	r := &mysqlRand{}
	seedOf := func(d types.Datum) int64 {
		if d.IsNull() {
			return 0
		}
		return intOf(d)
	}
	if k, ok := args[0].(*Constant); ok {
		r.seed(seedOf(k.fold().Value))
		return &funcExpr{name: name, ft: types.DoubleType, fn: func([]types.Datum) (types.Datum, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			return types.NewFloat(r.next()), nil
		}}, nil
	}
	return &funcExpr{name: name, args: args, ft: types.DoubleType, fn: func(a []types.Datum) (types.Datum, error) {
		var row mysqlRand
		row.seed(seedOf(a[0]))
		return types.NewFloat(row.next()), nil
	}}, nil
}
