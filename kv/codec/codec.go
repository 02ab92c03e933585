package codec

import (
	"encoding/binary"
	"errors"
	"slices"
)

// ErrInsufficientBytes is returned when the input ends inside a value.
var ErrInsufficientBytes = errors.New("codec: insufficient bytes to decode value")

// ErrInvalidEncoding is returned when a group marker or padding is malformed.
var ErrInvalidEncoding = errors.New("codec: invalid memcomparable encoding")

const signMask uint64 = 0x8000000000000000

// EncodeInt appends v so that encoded int64s sort by numeric value.
func EncodeInt(b []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(v)^signMask)
}

// DecodeInt decodes a value written by EncodeInt.
func DecodeInt(b []byte) ([]byte, int64, error) {
	if len(b) < 8 {
		return b, 0, ErrInsufficientBytes
	}
	return b[8:], int64(binary.BigEndian.Uint64(b) ^ signMask), nil
}

// EncodeUint appends v in big-endian order (ascending).
func EncodeUint(b []byte, v uint64) []byte {
	return binary.BigEndian.AppendUint64(b, v)
}

// DecodeUint decodes a value written by EncodeUint.
func DecodeUint(b []byte) ([]byte, uint64, error) {
	if len(b) < 8 {
		return b, 0, ErrInsufficientBytes
	}
	return b[8:], binary.BigEndian.Uint64(b), nil
}

// EncodeUintDesc appends v so that larger values sort first (MVCC versions:
// the newest commit timestamp of a key comes first).
func EncodeUintDesc(b []byte, v uint64) []byte {
	return binary.BigEndian.AppendUint64(b, ^v)
}

// DecodeUintDesc decodes a value written by EncodeUintDesc.
func DecodeUintDesc(b []byte) ([]byte, uint64, error) {
	if len(b) < 8 {
		return b, 0, ErrInsufficientBytes
	}
	return b[8:], ^binary.BigEndian.Uint64(b), nil
}

const (
	groupSize = 8
	marker    = byte(0xFF)
	pad       = byte(0x00)
)

// EncodeBytes appends data in the memcomparable group format used by TiKV:
// groups of 8 bytes, each followed by a marker byte 0xFF - (padding count).
// The result sorts like data and no encoded value is a prefix of another, so
// a suffix (such as a version) can follow it.
func EncodeBytes(b []byte, data []byte) []byte {
	dLen := len(data)
	b = slices.Grow(b, EncodedBytesLen(dLen))
	for idx := 0; idx <= dLen; idx += groupSize {
		remain := dLen - idx
		padCount := 0
		if remain >= groupSize {
			b = append(b, data[idx:idx+groupSize]...)
		} else {
			padCount = groupSize - remain
			b = append(b, data[idx:]...)
			for i := 0; i < padCount; i++ {
				b = append(b, pad)
			}
		}
		b = append(b, marker-byte(padCount))
	}
	return b
}

// EncodedBytesLen is the length EncodeBytes produces for n input bytes.
func EncodedBytesLen(n int) int {
	return (n/groupSize + 1) * (groupSize + 1)
}

// DecodeBytes decodes a value written by EncodeBytes, appending the decoded
// bytes to buf (which may be nil).
func DecodeBytes(b []byte, buf []byte) (rest []byte, decoded []byte, err error) {
	for {
		if len(b) < groupSize+1 {
			return b, buf, ErrInsufficientBytes
		}
		group := b[:groupSize]
		m := b[groupSize]
		b = b[groupSize+1:]
		padCount := marker - m
		if padCount > groupSize {
			return b, buf, ErrInvalidEncoding
		}
		realLen := groupSize - int(padCount)
		buf = append(buf, group[:realLen]...)
		if padCount != 0 {
			for _, p := range group[realLen:] {
				if p != pad {
					return b, buf, ErrInvalidEncoding
				}
			}
			return b, buf, nil
		}
	}
}
