package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/executor"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/session"
	"github.com/stratadb/strata/sql/types"
)

// Prepared statements: COM_STMT_PREPARE / EXECUTE / SEND_LONG_DATA / RESET
// / CLOSE, with binary-protocol parameters and result rows.

func (c *clientConn) handleStmtPrepare(ctx context.Context, q string) error {
	start := time.Now()
	p, err := c.sess.Prepare(ctx, q)
	durationFor("Prepare").Observe(time.Since(start).Seconds())
	if err != nil {
		return c.writeError(err)
	}
	b := append(c.wbuf[:0], 0x00)
	b = binary.LittleEndian.AppendUint32(b, p.ID)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(p.Columns)))
	b = binary.LittleEndian.AppendUint16(b, uint16(p.NumParams))
	b = append(b, 0, 0, 0) // filler, warnings
	c.wbuf = b
	if err := c.pkt.writePacket(b); err != nil {
		return err
	}
	if p.NumParams > 0 {
		param := executor.ResultColumn{Name: "?", Type: types.FieldType{Tp: mysql.TypeVarString, Flen: -1}}
		for range p.NumParams {
			if err := c.writeColumnDef(&param); err != nil {
				return err
			}
		}
		if c.caps&mysql.ClientDeprecateEOF == 0 {
			if err := c.writeEOF(c.status()); err != nil {
				return err
			}
		}
	}
	if len(p.Columns) > 0 {
		for i := range p.Columns {
			if err := c.writeColumnDef(&p.Columns[i]); err != nil {
				return err
			}
		}
		if c.caps&mysql.ClientDeprecateEOF == 0 {
			if err := c.writeEOF(c.status()); err != nil {
				return err
			}
		}
	}
	return nil
}

func errMalformedStmt(what string) error {
	return errno.New(errno.ErrUnknownCom, "Malformed COM_STMT packet: %s", what)
}

func (c *clientConn) handleStmtExecute(ctx context.Context, data []byte) error {
	start := time.Now()
	if len(data) < 9 {
		return c.writeError(errMalformedStmt("execute header"))
	}
	id := binary.LittleEndian.Uint32(data)
	p, ok := c.sess.PreparedStmt(id)
	if !ok {
		return c.writeError(errno.New(errUnknownStmt, "Unknown prepared statement handler (%d) given to mysqld_stmt_execute", id))
	}
	// flags (1) and iteration count (4) are ignored: no cursors.
	data = data[9:]
	params := make([]types.Datum, p.NumParams)
	if p.NumParams > 0 {
		nullLen := (p.NumParams + 7) / 8
		if len(data) < nullLen+1 {
			return c.writeError(errMalformedStmt("parameter null bitmap"))
		}
		nulls := data[:nullLen]
		bound := data[nullLen]
		data = data[nullLen+1:]
		if bound == 1 {
			if len(data) < 2*p.NumParams {
				return c.writeError(errMalformedStmt("parameter types"))
			}
			p.ParamTypes = append(p.ParamTypes[:0], data[:2*p.NumParams]...)
			data = data[2*p.NumParams:]
		}
		if len(p.ParamTypes) != 2*p.NumParams {
			return c.writeError(errMalformedStmt("parameter types were never sent"))
		}
		for i := range params {
			if nulls[i/8]&(1<<(i%8)) != 0 {
				continue
			}
			if ld, ok := p.LongData[i]; ok {
				params[i] = types.NewBytes(ld)
				continue
			}
			var err error
			params[i], data, err = readBinaryParam(p.ParamTypes[2*i], p.ParamTypes[2*i+1]&0x80 != 0, data)
			if err != nil {
				return c.writeError(errMalformedStmt(fmt.Sprintf("parameter %d: %v", i+1, err)))
			}
		}
	}
	p.LongData = nil
	label := session.StmtLabel(p.Stmt)
	res, err := c.sess.ExecutePrepared(ctx, p, params)
	if err != nil {
		e := errno.FromError(err)
		c.observe(label, p.Stmt.Text(), true, start, nil, e.Code)
		if e.Code == errno.ErrUnknown {
			c.log.Error("statement failed", "stmt", label, "err", err)
		}
		return c.writeError(e)
	}
	if res.IsQuery() {
		err = c.writeBinaryResultSet(res, c.status())
	} else {
		err = c.writeOK(c.affected(res), res.LastInsertID, c.status(), res.Info)
	}
	c.observe(label, p.Stmt.Text(), true, start, res, 0)
	return err
}

func (c *clientConn) handleStmtSendLongData(data []byte) {
	if len(data) < 6 {
		return // no response is defined for this command
	}
	p, ok := c.sess.PreparedStmt(binary.LittleEndian.Uint32(data))
	param := int(binary.LittleEndian.Uint16(data[4:]))
	if !ok || param >= p.NumParams {
		return
	}
	if p.LongData == nil {
		p.LongData = map[int][]byte{}
	}
	p.LongData[param] = append(p.LongData[param], data[6:]...)
}

func (c *clientConn) handleStmtReset(data []byte) error {
	if len(data) < 4 {
		return c.writeError(errMalformedStmt("reset"))
	}
	id := binary.LittleEndian.Uint32(data)
	p, ok := c.sess.PreparedStmt(id)
	if !ok {
		return c.writeError(errno.New(errUnknownStmt, "Unknown prepared statement handler (%d) given to mysqld_stmt_reset", id))
	}
	p.LongData = nil
	return c.writeOK(0, 0, c.status(), "")
}

func (c *clientConn) handleStmtClose(data []byte) {
	if len(data) >= 4 {
		c.sess.ClosePrepared(binary.LittleEndian.Uint32(data))
	}
}

func readBinaryParam(tp byte, unsigned bool, b []byte) (types.Datum, []byte, error) {
	need := func(n int) error {
		if len(b) < n {
			return fmt.Errorf("need %d bytes, have %d", n, len(b))
		}
		return nil
	}
	switch tp {
	case mysql.TypeNull:
		return types.NullDatum, b, nil
	case mysql.TypeTiny:
		if err := need(1); err != nil {
			return types.NullDatum, b, err
		}
		if unsigned {
			return types.NewInt(int64(b[0])), b[1:], nil
		}
		return types.NewInt(int64(int8(b[0]))), b[1:], nil
	case mysql.TypeShort, mysql.TypeYear:
		if err := need(2); err != nil {
			return types.NullDatum, b, err
		}
		v := binary.LittleEndian.Uint16(b)
		if unsigned {
			return types.NewInt(int64(v)), b[2:], nil
		}
		return types.NewInt(int64(int16(v))), b[2:], nil
	case mysql.TypeLong, mysql.TypeInt24:
		if err := need(4); err != nil {
			return types.NullDatum, b, err
		}
		v := binary.LittleEndian.Uint32(b)
		if unsigned {
			return types.NewInt(int64(v)), b[4:], nil
		}
		return types.NewInt(int64(int32(v))), b[4:], nil
	case mysql.TypeLonglong:
		if err := need(8); err != nil {
			return types.NullDatum, b, err
		}
		v := binary.LittleEndian.Uint64(b)
		if unsigned && v > math.MaxInt64 {
			return types.NewUint(v), b[8:], nil
		}
		return types.NewInt(int64(v)), b[8:], nil
	case mysql.TypeFloat:
		if err := need(4); err != nil {
			return types.NullDatum, b, err
		}
		return types.NewFloat(float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))), b[4:], nil
	case mysql.TypeDouble:
		if err := need(8); err != nil {
			return types.NullDatum, b, err
		}
		return types.NewFloat(math.Float64frombits(binary.LittleEndian.Uint64(b))), b[8:], nil
	case mysql.TypeDate, mysql.TypeDatetime, mysql.TypeTimestamp:
		if err := need(1); err != nil {
			return types.NullDatum, b, err
		}
		n := int(b[0])
		if err := need(1 + n); err != nil {
			return types.NullDatum, b, err
		}
		v, rest := b[1:1+n], b[1+n:]
		var y, mo, d, h, mi, s, us int
		if n >= 4 {
			y, mo, d = int(binary.LittleEndian.Uint16(v)), int(v[2]), int(v[3])
		}
		if n >= 7 {
			h, mi, s = int(v[4]), int(v[5]), int(v[6])
		}
		if n >= 11 {
			us = int(binary.LittleEndian.Uint32(v[7:]))
		}
		str := fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d", y, mo, d, h, mi, s)
		if us > 0 {
			str += fmt.Sprintf(".%06d", us)
		}
		if tp == mysql.TypeDate {
			str = str[:10]
		}
		return types.NewString(str), rest, nil
	case mysql.TypeDuration:
		if err := need(1); err != nil {
			return types.NullDatum, b, err
		}
		n := int(b[0])
		if err := need(1 + n); err != nil {
			return types.NullDatum, b, err
		}
		v, rest := b[1:1+n], b[1+n:]
		if n == 0 {
			return types.NewString("00:00:00"), rest, nil
		}
		if n < 8 {
			return types.NullDatum, b, fmt.Errorf("bad TIME length %d", n)
		}
		sign := ""
		if v[0] == 1 {
			sign = "-"
		}
		hours := int(binary.LittleEndian.Uint32(v[1:]))*24 + int(v[5])
		str := fmt.Sprintf("%s%02d:%02d:%02d", sign, hours, v[6], v[7])
		if n >= 12 {
			str += fmt.Sprintf(".%06d", binary.LittleEndian.Uint32(v[8:]))
		}
		return types.NewString(str), rest, nil
	}
	// Everything else (strings, decimals, blobs, JSON, ...) is length-encoded.
	n, rest, ok := readLenEncInt(b)
	if !ok || uint64(len(rest)) < n {
		return types.NullDatum, b, fmt.Errorf("bad length-encoded value of type %d", tp)
	}
	return types.NewBytes(rest[:n:n]), rest[n:], nil
}

func (c *clientConn) writeBinaryResultSet(res *executor.Result, status uint16) error {
	if err := c.pkt.writePacket(appendLenEncInt(c.wbuf[:0], uint64(len(res.Columns)))); err != nil {
		return err
	}
	for i := range res.Columns {
		if err := c.writeColumnDef(&res.Columns[i]); err != nil {
			return err
		}
	}
	if c.caps&mysql.ClientDeprecateEOF == 0 {
		if err := c.writeEOF(status); err != nil {
			return err
		}
	}
	nullLen := (len(res.Columns) + 7 + 2) / 8
	loc, local := c.localTimestamps(res)
	for _, row := range res.Rows {
		b := append(c.wbuf[:0], 0x00)
		nullAt := len(b)
		for range nullLen {
			b = append(b, 0)
		}
		for j, d := range row {
			if d.IsNull() {
				b[nullAt+(j+2)/8] |= 1 << ((j + 2) % 8)
				continue
			}
			if local != nil && local[j] {
				d = expr.TimestampToLocal(d, loc, res.Columns[j].Type.Decimal)
			}
			b = appendBinaryValue(b, d, res.Columns[j].Type)
		}
		c.wbuf = b
		if err := c.pkt.writePacket(b); err != nil {
			return err
		}
	}
	return c.writeEOF(status)
}

func datumInt(d types.Datum) uint64 {
	switch d.Kind() {
	case types.KindInt64, types.KindUint64:
		return d.Uint64()
	}
	f, _ := types.ToFloat(d)
	return uint64(int64(math.Round(f)))
}

// appendBinaryValue encodes d in the binary-protocol form of column type ft.
func appendBinaryValue(b []byte, d types.Datum, ft types.FieldType) []byte {
	switch wireType(ft) {
	case mysql.TypeTiny:
		return append(b, byte(datumInt(d)))
	case mysql.TypeShort, mysql.TypeYear:
		return binary.LittleEndian.AppendUint16(b, uint16(datumInt(d)))
	case mysql.TypeLong, mysql.TypeInt24:
		return binary.LittleEndian.AppendUint32(b, uint32(datumInt(d)))
	case mysql.TypeLonglong:
		return binary.LittleEndian.AppendUint64(b, datumInt(d))
	case mysql.TypeFloat:
		f, _ := types.ToFloat(d)
		return binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(f)))
	case mysql.TypeDouble:
		f, _ := types.ToFloat(d)
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
	case mysql.TypeDuration:
		return appendBinaryDuration(b, d)
	case mysql.TypeDate, mysql.TypeDatetime, mysql.TypeTimestamp:
		// Zero months and days are sent as they are; the zero date is
		// length 0, as MySQL sends it.
		t, ok := types.ParseDateParts(string(types.AppendText(nil, d, &ft)))
		if !ok || t == (types.DateParts{}) {
			return append(b, 0)
		}
		us := t.Micro
		switch {
		case us != 0:
			b = append(b, 11)
		case t.Hour != 0 || t.Minute != 0 || t.Second != 0:
			b = append(b, 7)
		default:
			b = append(b, 4)
		}
		n := b[len(b)-1]
		b = binary.LittleEndian.AppendUint16(b, uint16(t.Year))
		b = append(b, byte(t.Month), byte(t.Day))
		if n >= 7 {
			b = append(b, byte(t.Hour), byte(t.Minute), byte(t.Second))
		}
		if n == 11 {
			b = binary.LittleEndian.AppendUint32(b, uint32(us))
		}
		return b
	}
	start := len(b)
	b = append(b, 0)
	b = types.AppendText(b, d, &ft)
	if n := len(b) - start - 1; n < 251 {
		b[start] = byte(n)
		return b
	}
	val := append([]byte(nil), b[start+1:]...)
	return appendLenEncBytes(b[:start], val)
}

// appendBinaryDuration encodes a TIME value as the binary protocol does:
// length 0 (zero), 8 (sign, days, h, m, s) or 12 (+ microseconds).
func appendBinaryDuration(b []byte, d types.Datum) []byte {
	us, ok := types.ParseDuration(string(types.AppendText(nil, d, nil)))
	if !ok || us == 0 {
		return append(b, 0)
	}
	neg := byte(0)
	if us < 0 {
		neg, us = 1, -us
	}
	micro := us % 1_000_000
	secs := us / 1_000_000
	n := byte(8)
	if micro != 0 {
		n = 12
	}
	b = append(b, n, neg)
	b = binary.LittleEndian.AppendUint32(b, uint32(secs/86400))
	b = append(b, byte(secs/3600%24), byte(secs/60%60), byte(secs%60))
	if n == 12 {
		b = binary.LittleEndian.AppendUint32(b, uint32(micro))
	}
	return b
}
