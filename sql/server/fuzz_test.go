package server_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/server"
)

// The fuzz targets call the packet framing, the handshake-response decoder,
// the connection phase and the command dispatch in-process (over an
// in-memory net.Conn, see export_test.go), so one input costs microseconds.
// Seeds are in testdata/fuzz/<Target>; run one with e.g.
//
//	go test -run '^$' -fuzz '^FuzzCommand$' -fuzztime 10m ./sql/server
//
// Every target requires: no panic (a recovered panic in dispatch counts as
// a failure), and a well-framed server output (packets with consecutive
// sequence ids, none larger than 16 MiB - 1).

// allCaps is what a modern client asks for.
const allCaps = mysql.ClientProtocol41 | mysql.ClientSecureConnection | mysql.ClientPluginAuth |
	mysql.ClientPluginAuthLenencClientData | mysql.ClientMultiStatements | mysql.ClientMultiResults |
	mysql.ClientConnectWithDB | mysql.ClientDeprecateEOF | mysql.ClientTransactions | mysql.ClientConnectAtts

// fuzzServer is a Server (not listening) over the in-memory store, with
// database test and table test.f.
func fuzzServer(f *testing.F) *server.Server { return fuzzServerWith(f, "") }

// fuzzServerWith is fuzzServer with accounts of authentication plugin.
func fuzzServerWith(f *testing.F, plugin string) *server.Server {
	srv, err := server.New(server.Config{
		Store:      newTestStore(f),
		Users:      map[string]string{"root": "", "alice": "s3cret"},
		AuthPlugin: plugin,
		MaxPacket:  1 << 20,
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(f, err)
	c := srv.NewTestConn(nil)
	c.LoginAs(context.Background(), "root", allCaps)
	for _, q := range []string{"CREATE DATABASE test", "CREATE TABLE test.f (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO test.f VALUES (1, 'a'), (2, NULL)"} {
		_, err := c.Dispatch(context.Background(), append([]byte{mysql.ComQuery}, q...))
		require.NoError(f, err)
		out := c.Output()
		require.Equal(f, byte(0), out[4], "%s: %q", q, out)
	}
	return srv
}

// checkFraming requires out to be whole packets with sequence ids
// counting up from seq (or, with gaps, only increasing: in the connection
// phase the client's packets take the ids in between).
func checkFraming(t *testing.T, out []byte, seq byte, gaps bool) {
	t.Helper()
	for len(out) > 0 {
		require.GreaterOrEqual(t, len(out), 4, "truncated packet header in server output")
		n := int(out[0]) | int(out[1])<<8 | int(out[2])<<16
		if gaps && out[3] > seq {
			seq = out[3]
		}
		require.Equal(t, seq, out[3], "sequence id of a server packet")
		require.GreaterOrEqual(t, len(out)-4, n, "truncated packet in server output")
		out = out[4+n:]
		seq++
	}
}

// panics reads the server's panic counter.
func panics(t testing.TB) float64 { return counter(t, "strata_sql_panics_total") }

// counter reads an unlabelled counter from the default registry (0 when
// it was never incremented).
func counter(t testing.TB, name string) float64 {
	mfs, err := prometheus.DefaultGatherer.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// labeledCounters reads the counter vector name by its (single) label's
// value.
func labeledCounters(t testing.TB, name string) map[string]float64 {
	mfs, err := prometheus.DefaultGatherer.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	return out
}

// commandSeeds cover every command the server implements.
var commandSeeds = [][]byte{
	append([]byte{0x03}, "SELECT 1"...),
	append([]byte{0x03}, "SELECT v, COUNT(*) FROM test.f WHERE id > 0 GROUP BY v ORDER BY 2 LIMIT 1"...),
	append([]byte{0x03}, "UPDATE test.f SET v = CONCAT(v, 'x') WHERE id BETWEEN 1 AND 2"...),
	append([]byte{0x03}, "SELECT 1; SELECT @@version_comment LIMIT 1"...),
	append([]byte{0x16}, "SELECT ? + ?"...),                                                    // COM_STMT_PREPARE
	{0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0},                   // COM_STMT_EXECUTE, 2 params
	{0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0x0c, 0, 0xfe, 0, 7, 0xe8, 7, 1, 2, 3, 4, 5, 0, 0}, // DATETIME, VAR_STRING
	{0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0, 3, 0},                                                    // both NULL, types not sent
	{0x17, 99, 0, 0, 0, 0, 1, 0, 0, 0},                                                         // unknown statement
	{0x18, 1, 0, 0, 0, 0, 0, 'a', 'b'},                                                         // COM_STMT_SEND_LONG_DATA
	{0x1a, 1, 0, 0, 0},                                                                         // COM_STMT_RESET
	{0x19, 1, 0, 0, 0},                                                                         // COM_STMT_CLOSE
	{0x1c, 1, 0, 0, 0, 1, 0, 0, 0},                                                             // COM_STMT_FETCH
	append([]byte{0x02}, "test"...),                                                            // COM_INIT_DB
	append([]byte{0x04}, "f\x00"...),                                                           // COM_FIELD_LIST
	{0x09}, {0x1f}, {0x0e}, {0x01}, {0x11}, {0x1b, 0, 0}, {0xff}, {},
}

// FuzzCommand runs one arbitrary command packet on a logged-in connection
// that has prepared statement 1, "SELECT ?, ? + 1" (2 parameters).
func FuzzCommand(f *testing.F) {
	for _, s := range commandSeeds {
		f.Add(s)
	}
	srv := fuzzServer(f)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, payload []byte) {
		before := panics(t)
		c := srv.NewTestConn(nil)
		c.LoginAs(ctx, "root", allCaps)
		_, err := c.Dispatch(ctx, append([]byte{mysql.ComStmtPrepare}, "SELECT ?, ? + 1"...))
		require.NoError(t, err)
		require.Equal(t, byte(0), c.Output()[4], "prepare")
		_, _ = c.Dispatch(ctx, payload) // an error is the client's (memConn writes never fail)
		require.Equal(t, before, panics(t), "command %q panicked (see the server log)", payload)
		checkFraming(t, c.Output(), 1, false)
	})
}

// FuzzSession feeds an arbitrary byte stream to a logged-in connection:
// framing, then every command in it, as serve does, until an error or
// COM_QUIT. It explores multi-packet commands and command sequences
// (prepare, then execute the id it got).
func FuzzSession(f *testing.F) {
	for i := range commandSeeds {
		var stream []byte
		stream = append(stream, server.FramePackets(append([]byte{mysql.ComStmtPrepare}, "SELECT ? FROM test.f WHERE id > ?"...), 0)...)
		stream = append(stream, server.FramePackets(commandSeeds[i], 0)...)
		stream = append(stream, server.FramePackets(commandSeeds[(i+1)%len(commandSeeds)], 0)...)
		f.Add(stream)
	}
	f.Add([]byte{1, 0, 0, 0, 0x0e, 1, 0, 0, 1, 0x0e}) // wrong sequence id
	f.Add([]byte{0xff, 0xff, 0xff, 0, 3, 'S'})        // truncated continuation
	f.Add([]byte{0xff, 0xff, 0x7f, 0})                // over max_allowed_packet
	srv := fuzzServer(f)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, stream []byte) {
		before := panics(t)
		c := srv.NewTestConn(stream)
		c.LoginAs(ctx, "root", allCaps)
		for range 64 {
			data, err := c.ReadCommand()
			if err != nil {
				break
			}
			quit, err := c.Dispatch(ctx, data)
			require.Equal(t, before, panics(t), "command %q panicked (see the server log)", data)
			checkFraming(t, c.Output(), 1, false)
			if quit || err != nil {
				break
			}
		}
	})
}

// FuzzHandshake runs the connection phase against an arbitrary client
// stream: the HandshakeResponse41 (and, when the server switches the auth
// plugin, the client's answer). The server must answer OK or ERR, never
// panic, and log in only a known user with the right password.
func FuzzHandshake(f *testing.F) {
	resp := func(caps uint32, user string, auth []byte, db, plugin string) []byte {
		b := binary.LittleEndian.AppendUint32(nil, caps)
		b = binary.LittleEndian.AppendUint32(b, 1<<24)
		b = append(b, 45)
		b = append(b, make([]byte, 23)...)
		b = append(b, user...)
		b = append(b, 0)
		if caps&mysql.ClientPluginAuthLenencClientData != 0 {
			b = server.AppendLenEncInt(b, uint64(len(auth)))
		} else {
			b = append(b, byte(len(auth)))
		}
		b = append(b, auth...)
		if caps&mysql.ClientConnectWithDB != 0 {
			b = append(append(b, db...), 0)
		}
		if caps&mysql.ClientPluginAuth != 0 {
			b = append(append(b, plugin...), 0)
		}
		if caps&mysql.ClientConnectAtts != 0 {
			b = append(b, 9, 4, 'n', 'a', 'm', 'e', 3, 'g', 'o', '!')
		}
		return b
	}
	for _, r := range [][]byte{
		resp(allCaps, "root", nil, "", "mysql_native_password"),
		resp(allCaps, "root", nil, "test", "mysql_native_password"),
		resp(allCaps, "alice", bytes.Repeat([]byte{7}, 20), "nosuch", "mysql_native_password"),
		resp(allCaps&^mysql.ClientPluginAuthLenencClientData, "root", nil, "", "caching_sha2_password"),
		resp(mysql.ClientProtocol41|mysql.ClientSecureConnection, "root", nil, "", ""),
		resp(allCaps|mysql.ClientSSL, "root", nil, "", ""),
		{1, 2, 3},
	} {
		f.Add(r, false)
		f.Add(append(server.FramePackets(r, 1), server.FramePackets(nil, 3)...), true)
	}
	f.Add(append(server.FramePackets(resp(allCaps, "alice", make([]byte, 32), "", "caching_sha2_password"), 1),
		server.FramePackets([]byte{2}, 3)...), true) // full authentication, public key request
	native, sha2 := fuzzServer(f), fuzzServerWith(f, "caching_sha2_password")
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, data []byte, raw bool) {
		_, _, _, _, _ = server.ParseHandshakeResponse(data)
		stream := data
		if !raw {
			stream = server.FramePackets(data, 1)
		}
		srv := native
		if len(data) > 0 && data[len(data)-1]&1 != 0 {
			srv = sha2
		}
		c := srv.NewTestConn(stream)
		err := c.Handshake(ctx)
		out := c.Output()
		checkFraming(t, out, 0, true)
		// The last packet is the verdict: OK only when the handshake
		// succeeded.
		last := lastPacket(out)
		if err == nil {
			require.Equal(t, byte(0), last[0], "handshake succeeded but the last packet is %q", last)
		} else if len(last) > 0 && last[0] == 0 {
			t.Fatalf("handshake failed (%v) but the server sent OK", err)
		}
	})
}

func lastPacket(out []byte) []byte {
	var last []byte
	for len(out) >= 4 {
		n := int(out[0]) | int(out[1])<<8 | int(out[2])<<16
		last = out[4 : 4+n]
		out = out[4+n:]
	}
	return last
}

// FuzzPacketFraming reads an arbitrary byte stream as packets with a small
// max_allowed_packet (every payload within the limit, errors only of the
// framing kinds), and requires that any payload the server frames reads
// back unchanged.
func FuzzPacketFraming(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 0x0e}, uint16(100))
	f.Add([]byte{1, 0, 0, 1, 0x0e}, uint16(100))
	f.Add([]byte{0xff, 0xff, 0xff, 0, 1}, uint16(100))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0}, uint16(0))
	f.Fuzz(func(t *testing.T, stream []byte, limit uint16) {
		payloads, err := server.ReadPackets(stream, int(limit))
		for _, p := range payloads {
			require.LessOrEqual(t, len(p), int(limit))
		}
		if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) &&
			!errors.Is(err, server.ErrPacketTooLarge) && !errors.Is(err, server.ErrOutOfOrder) {
			t.Fatalf("unexpected framing error %v", err)
		}
		got, err := server.ReadPackets(server.FramePackets(stream, 0), len(stream))
		require.ErrorIs(t, err, io.EOF)
		require.Len(t, got, 1)
		require.Equal(t, string(stream), string(got[0]))

		v, rest, ok := server.ReadLenEncInt(stream)
		if ok {
			enc := server.AppendLenEncInt(nil, v)
			v2, rest2, ok2 := server.ReadLenEncInt(enc)
			require.True(t, ok2)
			require.Equal(t, v, v2)
			require.Empty(t, rest2)
			require.LessOrEqual(t, len(rest), len(stream))
		}
	})
}
