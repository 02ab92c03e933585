package server

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
)

const maxPayload = 1<<24 - 1

// keepReadBuf is the largest read buffer a connection keeps between packets.
const keepReadBuf = 1 << 20

// errPacketTooLarge is returned when a client packet exceeds the limit.
var errPacketTooLarge = errors.New("server: packet larger than max_allowed_packet")

// errMalformed is returned for a packet that cannot be parsed.
var errMalformed = errors.New("server: malformed packet")

// errOutOfOrder is returned for a packet with the wrong sequence id.
var errOutOfOrder = errors.New("server: packets out of order")

// packetIO frames MySQL packets on one connection. Not safe for concurrent
// use. The slice returned by readPacket is valid until the next read.
type packetIO struct {
	conn    net.Conn
	r       *bufio.Reader
	w       *bufio.Writer
	seq     uint8
	rbuf    []byte
	maxRead int
	// rhdr and whdr hold packet headers: a local array escapes through
	// the reader and writer, one allocation per packet.
	rhdr, whdr [4]byte
}

func newPacketIO(c net.Conn, maxRead int) *packetIO {
	return &packetIO{conn: c, r: bufio.NewReaderSize(c, 16<<10), w: bufio.NewWriterSize(c, 16<<10), maxRead: maxRead}
}

func (p *packetIO) readPacket() ([]byte, error) {
	if cap(p.rbuf) > keepReadBuf {
		p.rbuf = nil // do not pin one big packet's buffer for the connection's life
	}
	p.rbuf = p.rbuf[:0]
	hdr := &p.rhdr
	for {
		if _, err := io.ReadFull(p.r, hdr[:]); err != nil {
			return nil, err
		}
		n := int(uint32(hdr[0]) | uint32(hdr[1])<<8 | uint32(hdr[2])<<16)
		if hdr[3] != p.seq {
			return nil, fmt.Errorf("%w: sequence %d, expected %d", errOutOfOrder, hdr[3], p.seq)
		}
		p.seq++
		if len(p.rbuf)+n > p.maxRead {
			return nil, errPacketTooLarge
		}
		start := len(p.rbuf)
		p.rbuf = growTo(p.rbuf, start+n)
		if _, err := io.ReadFull(p.r, p.rbuf[start:start+n]); err != nil {
			return nil, err
		}
		if n < maxPayload {
			return p.rbuf, nil
		}
	}
}

func growTo(b []byte, n int) []byte {
	if cap(b) >= n {
		return b[:n]
	}
	nb := make([]byte, n, max(n, 2*cap(b)))
	copy(nb, b)
	return nb
}

// writePacket frames payload (splitting at 16 MB) into the write buffer.
func (p *packetIO) writePacket(payload []byte) error {
	for {
		n := min(len(payload), maxPayload)
		p.whdr = [4]byte{byte(n), byte(n >> 8), byte(n >> 16), p.seq}
		hdr := &p.whdr
		p.seq++
		if _, err := p.w.Write(hdr[:]); err != nil {
			return err
		}
		if _, err := p.w.Write(payload[:n]); err != nil {
			return err
		}
		payload = payload[n:]
		if n < maxPayload {
			return nil
		}
	}
}

func (p *packetIO) flush() error { return p.w.Flush() }

// Length-encoded integers and strings.

func appendLenEncInt(b []byte, v uint64) []byte {
	switch {
	case v < 251:
		return append(b, byte(v))
	case v < 1<<16:
		return append(b, 0xfc, byte(v), byte(v>>8))
	case v < 1<<24:
		return append(b, 0xfd, byte(v), byte(v>>8), byte(v>>16))
	}
	b = append(b, 0xfe)
	return binary.LittleEndian.AppendUint64(b, v)
}

func appendLenEncString(b []byte, s string) []byte {
	b = appendLenEncInt(b, uint64(len(s)))
	return append(b, s...)
}

func appendLenEncBytes(b []byte, s []byte) []byte {
	b = appendLenEncInt(b, uint64(len(s)))
	return append(b, s...)
}

// readLenEncInt parses a length-encoded integer; ok=false when truncated.
func readLenEncInt(b []byte) (v uint64, rest []byte, ok bool) {
	if len(b) == 0 {
		return 0, b, false
	}
	switch b[0] {
	case 0xfc:
		if len(b) < 3 {
			return 0, b, false
		}
		return uint64(binary.LittleEndian.Uint16(b[1:])), b[3:], true
	case 0xfd:
		if len(b) < 4 {
			return 0, b, false
		}
		return uint64(b[1]) | uint64(b[2])<<8 | uint64(b[3])<<16, b[4:], true
	case 0xfe:
		if len(b) < 9 {
			return 0, b, false
		}
		return binary.LittleEndian.Uint64(b[1:]), b[9:], true
	case 0xfb, 0xff:
		return 0, b, false
	}
	return uint64(b[0]), b[1:], true
}

// readNulString returns the bytes up to a NUL and the rest after it.
func readNulString(b []byte) (s []byte, rest []byte, ok bool) {
	for i, c := range b {
		if c == 0 {
			return b[:i], b[i+1:], true
		}
	}
	return nil, b, false
}
