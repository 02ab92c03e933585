package server

import (
	"bytes"
	"context"
	"net"
	"sync/atomic"
	"time"

	"github.com/stratadb/strata/sql/session"
)

// Hooks for the external tests (package server_test): the fuzz targets run
// the real decoders and command dispatch in-process, over memConn, so that
// one input costs microseconds instead of a socket round trip.

// memConn is a net.Conn whose reads come from a fixed byte string (then
// io.EOF) and whose writes are collected. Deadlines are ignored.
type memConn struct {
	in  *bytes.Reader
	out bytes.Buffer
}

func (m *memConn) Read(b []byte) (int, error)       { return m.in.Read(b) }
func (m *memConn) Write(b []byte) (int, error)      { return m.out.Write(b) }
func (m *memConn) Close() error                     { return nil }
func (m *memConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4000} }
func (m *memConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000} }
func (m *memConn) SetDeadline(time.Time) error      { return nil }
func (m *memConn) SetReadDeadline(time.Time) error  { return nil }
func (m *memConn) SetWriteDeadline(time.Time) error { return nil }

// testConnIDs numbers the TestConns.
var testConnIDs atomic.Uint64

// TestConn is a connection of s served in-process.
type TestConn struct {
	c  *clientConn
	mc *memConn
}

// NewTestConn returns a connection whose client will send input; the
// connection is not registered with the server (no Run needed).
func (s *Server) NewTestConn(input []byte) *TestConn {
	mc := &memConn{in: bytes.NewReader(input)}
	c := &clientConn{srv: s, id: makeConnID(0, testConnIDs.Add(1)), pkt: newPacketIO(mc, s.cfg.MaxPacket), log: s.log}
	return &TestConn{c: c, mc: mc}
}

// Handshake runs the connection phase against the input; it reports
// whether the client logged in.
func (t *TestConn) Handshake(ctx context.Context) error {
	return t.c.handshake(ctx)
}

// LoginAs makes the connection logged in as user without a handshake.
func (t *TestConn) LoginAs(ctx context.Context, user string, caps uint32) {
	t.c.caps = caps & t.c.srv.caps()
	t.c.user = user
	t.c.sess = session.New(t.c.srv.dom, t.c.id, user, "127.0.0.1")
}

// Dispatch runs one command packet (payload without header) as serve does,
// including the panic recovery, and flushes the response.
func (t *TestConn) Dispatch(ctx context.Context, data []byte) (quit bool, err error) {
	t.c.pkt.seq = 1 // the command itself was sequence 0
	quit, err = t.c.dispatch(ctx, data)
	if err == nil {
		err = t.c.pkt.flush()
	}
	return quit, err
}

// ReadCommand reads the next command packet from the input, as serve does.
func (t *TestConn) ReadCommand() ([]byte, error) {
	t.c.pkt.seq = 0
	return t.c.pkt.readPacket()
}

// Output returns and clears what the server wrote.
func (t *TestConn) Output() []byte {
	b := append([]byte(nil), t.mc.out.Bytes()...)
	t.mc.out.Reset()
	return b
}

// ParseHandshakeResponse exposes the HandshakeResponse41 decoder.
func ParseHandshakeResponse(b []byte) (user, db, plugin string, auth []byte, err error) {
	r, err := parseHandshakeResponse(b)
	return r.user, r.db, r.plugin, r.auth, err
}

// ReadLenEncInt exposes the length-encoded integer decoder.
func ReadLenEncInt(b []byte) (uint64, []byte, bool) { return readLenEncInt(b) }

// AppendLenEncInt exposes the length-encoded integer encoder.
func AppendLenEncInt(b []byte, v uint64) []byte { return appendLenEncInt(b, v) }

// FramePackets splits payload into wire packets as the server writes them.
func FramePackets(payload []byte, seq uint8) []byte {
	mc := &memConn{in: bytes.NewReader(nil)}
	p := newPacketIO(mc, 0)
	p.seq = seq
	_ = p.writePacket(payload)
	_ = p.flush()
	return mc.out.Bytes()
}

// ReadPackets reads packets from stream as the server does (with limit as
// max_allowed_packet) until an error, each logical packet starting at
// sequence 0 like a command; it returns the payloads read and the final
// error.
func ReadPackets(stream []byte, limit int) ([][]byte, error) {
	p := newPacketIO(&memConn{in: bytes.NewReader(stream)}, limit)
	var out [][]byte
	for {
		p.seq = 0
		b, err := p.readPacket()
		if err != nil {
			return out, err
		}
		out = append(out, append([]byte(nil), b...))
	}
}

// ErrPacketTooLarge and ErrOutOfOrder are readPacket's framing errors.
var (
	ErrPacketTooLarge = errPacketTooLarge
	ErrOutOfOrder     = errOutOfOrder
)

// ConnCount is the number of registered connections.
func (s *Server) ConnCount() int { return s.connCount() }
