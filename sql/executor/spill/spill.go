package spill

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	dto "github.com/prometheus/client_model/go"
	"github.com/stratadb/strata/sql/types"
)

const dirPrefix = "strata-spill-"

var dir struct {
	sync.Mutex
	root string // "" until SetRoot: os.TempDir()
	path string // created on first use
}

// SetRoot sets the directory under which this process's spill directory
// is created, and removes the spill directories of processes that are no
// longer running (a crash leaves at most empty ones: files are unlinked
// when created).
func SetRoot(root string) error {
	if root == "" {
		root = os.TempDir()
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("spill: tmp storage path %s: %w (give --tmp-storage-path or TMPDIR a writable directory)", root, err)
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return fmt.Errorf("spill: tmp storage path %s: %w", root, err)
	}
	for _, e := range ents {
		pid, ok := strings.CutPrefix(e.Name(), dirPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		n, err := strconv.Atoi(pid)
		if err != nil || n == os.Getpid() || alive(n) {
			continue
		}
		_ = os.RemoveAll(filepath.Join(root, e.Name()))
	}
	dir.Lock()
	defer dir.Unlock()
	dir.root, dir.path = root, ""
	return nil
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Cleanup removes this process's spill directory (at shutdown).
func Cleanup() {
	dir.Lock()
	defer dir.Unlock()
	if dir.path != "" {
		_ = os.RemoveAll(dir.path)
		dir.path = ""
	}
}

func spillDir() (string, error) {
	dir.Lock()
	defer dir.Unlock()
	if dir.path != "" {
		return dir.path, nil
	}
	root := dir.root
	if root == "" {
		root = os.TempDir()
	}
	p := filepath.Join(root, dirPrefix+strconv.Itoa(os.Getpid()))
	if err := os.MkdirAll(p, 0o700); err != nil {
		return "", fmt.Errorf("spill: %w", err)
	}
	dir.path = p
	return p, nil
}

var (
	spillFiles = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "sql", Name: "spill_total",
		Help: "Times an operator wrote rows to disk because its statement was over tidb_mem_quota_query, by operator.",
	}, []string{"op"})
	spillBytes = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "sql", Name: "spill_bytes_total",
		Help: "Bytes operators wrote to spill files, by operator.",
	}, []string{"op"})
)

// Spilled counts one spill of operator op (a label: sort, hash_join,
// hash_agg).
func Spilled(op string) { spillFiles.WithLabelValues(op).Inc() }

// Bytes is how many bytes operator op wrote to spill files since the
// process started.
func Bytes(op string) float64 {
	var m dto.Metric
	_ = spillBytes.WithLabelValues(op).Write(&m)
	return m.GetCounter().GetValue()
}

// Count is how many times operator op spilled since the process started.
func Count(op string) float64 {
	var m dto.Metric
	_ = spillFiles.WithLabelValues(op).Write(&m)
	return m.GetCounter().GetValue()
}

// File is a temporary file of rows: written with Write, read with Reader.
type File struct {
	f    *os.File
	w    *bufio.Writer
	size int64 // bytes written (through w)
	op   prometheus.Counter
	buf  []byte
	rows int64
}

// Create returns a new empty File for operator op (a metrics label). The
// file has no name: it is gone once closed.
func Create(op string) (*File, error) {
	d, err := spillDir()
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(d, "rows-")
	if err != nil {
		return nil, fmt.Errorf("spill: %w", err)
	}
	_ = os.Remove(f.Name())
	return &File{f: f, w: bufio.NewWriterSize(f, 64<<10), op: spillBytes.WithLabelValues(op)}, nil
}

// Size is the number of bytes written.
func (f *File) Size() int64 { return f.size }

// Rows is the number of rows written.
func (f *File) Rows() int64 { return f.rows }

// Write appends row.
func (f *File) Write(row []types.Datum) error {
	b := f.buf[:0]
	for _, d := range row {
		k := d.Kind()
		if k == types.KindAbsent {
			k = types.KindNull
		}
		b = append(b, byte(k))
		switch k {
		case types.KindInt64, types.KindUint64, types.KindFloat64:
			b = binary.LittleEndian.AppendUint64(b, d.Uint64())
		case types.KindBytes, types.KindJSON:
			b = binary.AppendUvarint(b, uint64(len(d.Bytes())))
			b = append(b, d.Bytes()...)
		}
	}
	f.buf = b
	n, err := f.w.Write(b)
	f.size += int64(n)
	f.op.Add(float64(n))
	f.rows++
	if err != nil {
		return fmt.Errorf("spill: write: %w", err)
	}
	return nil
}

// Close closes (and so deletes) the file. Readers of it stop working.
func (f *File) Close() error {
	if f == nil || f.f == nil {
		return nil
	}
	err := f.f.Close()
	f.f = nil
	return err
}

// Reader returns a reader of the rows in bytes [off, end) of f (offsets
// from Size; f.Size() for end reads to what is written now). It flushes
// what f buffers.
func (f *File) Reader(off, end int64, width int) (*Reader, error) {
	if err := f.w.Flush(); err != nil {
		return nil, fmt.Errorf("spill: write: %w", err)
	}
	return &Reader{r: bufio.NewReaderSize(io.NewSectionReader(f.f, off, end-off), 32<<10), width: width}, nil
}

// Reader reads rows of a File in the order they were written.
type Reader struct {
	r     *bufio.Reader
	width int
}

// Next decodes the next row into row (len width). Byte values are new
// allocations the caller may keep. ok is false at the end.
func (r *Reader) Next(row []types.Datum) (ok bool, err error) {
	var buf []byte
	for i := range r.width {
		k, err := r.r.ReadByte()
		if err != nil {
			if err == io.EOF && i == 0 {
				return false, nil
			}
			return false, fmt.Errorf("spill: read: %w", eofErr(err))
		}
		switch types.Kind(k) {
		case types.KindNull:
			row[i] = types.NullDatum
		case types.KindInt64, types.KindUint64, types.KindFloat64:
			var b [8]byte
			if _, err := io.ReadFull(r.r, b[:]); err != nil {
				return false, fmt.Errorf("spill: read: %w", eofErr(err))
			}
			n := binary.LittleEndian.Uint64(b[:])
			switch types.Kind(k) {
			case types.KindInt64:
				row[i] = types.NewInt(int64(n))
			case types.KindUint64:
				row[i] = types.NewUint(n)
			default:
				row[i] = types.NewFloat(math.Float64frombits(n))
			}
		case types.KindBytes, types.KindJSON:
			n, err := binary.ReadUvarint(r.r)
			if err != nil {
				return false, fmt.Errorf("spill: read: %w", eofErr(err))
			}
			if len(buf) < int(n) {
				buf = make([]byte, max(int(n), 256))
			}
			v := buf[:n:n]
			buf = buf[n:]
			if _, err := io.ReadFull(r.r, v); err != nil {
				return false, fmt.Errorf("spill: read: %w", eofErr(err))
			}
			row[i] = types.NewBytes(v)
			if types.Kind(k) == types.KindJSON {
				row[i] = types.NewJSONBytes(v)
			}
		default:
			return false, fmt.Errorf("spill: read: bad datum kind %d", k)
		}
	}
	return true, nil
}

func eofErr(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
