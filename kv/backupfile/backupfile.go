package backupfile

import (
	"context"
	"errors"
	"fmt"
	"hash/crc64"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2/objstorage"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/time/rate"
)

// ErrFile: a backup file could not be written or read.
var ErrFile = errors.New("backupfile")

var crcTable = crc64.MakeTable(crc64.ECMA)

// Checksum summarizes a set of key/value pairs (doc.go).
type Checksum struct {
	KVs   uint64 `json:"kvs"`
	Bytes uint64 `json:"bytes"`
	CRC64 uint64 `json:"crc64_xor"`
}

// Add counts one pair.
func (c *Checksum) Add(k, v []byte) {
	h := crc64.Update(0, crcTable, k)
	h = crc64.Update(h, crcTable, v)
	c.CRC64 ^= h
	c.KVs++
	c.Bytes += uint64(len(k) + len(v))
}

// Merge adds the pairs o summarizes (disjoint from c's).
func (c *Checksum) Merge(o Checksum) {
	c.CRC64 ^= o.CRC64
	c.KVs += o.KVs
	c.Bytes += o.Bytes
}

// String is for messages.
func (c Checksum) String() string {
	return fmt.Sprintf("kvs=%d bytes=%d crc64_xor=%016x", c.KVs, c.Bytes, c.CRC64)
}

// Writer writes one backup file. Create it with Create; Add pairs in
// increasing key order; Finish syncs and closes it, Abort removes it.
type Writer struct {
	path string
	w    *sstable.Writer
	lw   *limitedWritable
	sum  Checksum
}

// Create starts the file path (its directory is created if missing),
// its writes paced by limit (nil: none) under ctx.
func Create(ctx context.Context, path string, limit *rate.Limiter) (*Writer, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("%w: create %s: %w", ErrFile, filepath.Dir(path), err)
	}
	f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("%w: create %s: %w", ErrFile, path, err)
	}
	lw := &limitedWritable{w: objstorageprovider.NewFileWritable(f), limit: limit, ctx: ctx}
	w := sstable.NewWriter(lw, sstable.WriterOptions{TableFormat: sstable.TableFormatPebblev4})
	return &Writer{path: path, w: w, lw: lw}, nil
}

// Add appends a pair; keys must increase.
func (w *Writer) Add(k, v []byte) error {
	if err := w.w.Set(k, v); err != nil {
		return fmt.Errorf("%w: write %s: %w", ErrFile, w.path, err)
	}
	w.sum.Add(k, v)
	return nil
}

// Checksum is what was added so far.
func (w *Writer) Checksum() Checksum { return w.sum }

// Finish closes the file (synced) and returns its size.
func (w *Writer) Finish() (uint64, error) {
	if err := w.w.Close(); err != nil {
		os.Remove(w.path)
		return 0, fmt.Errorf("%w: finish %s: %w", ErrFile, w.path, err)
	}
	return w.lw.n, nil
}

// Abort closes and removes the file.
func (w *Writer) Abort() {
	w.w.Close()
	os.Remove(w.path)
}

// limitedWritable paces the sstable writer's output by limit and counts it.
type limitedWritable struct {
	w     objstorage.Writable
	limit *rate.Limiter
	ctx   context.Context
	n     uint64
}

func (l *limitedWritable) Write(p []byte) error {
	if l.limit != nil {
		for n := len(p); n > 0; {
			k := min(n, l.limit.Burst())
			if err := l.limit.WaitN(l.ctx, k); err != nil {
				return err
			}
			n -= k
		}
	}
	l.n += uint64(len(p))
	return l.w.Write(p)
}
func (l *limitedWritable) Finish() error { return l.w.Finish() }
func (l *limitedWritable) Abort()        { l.w.Abort() }

// NewLimiter returns a limiter of bytesPerSec (0: nil, no limit) with a
// burst that lets the sstable writer's blocks through.
func NewLimiter(bytesPerSec uint64) *rate.Limiter {
	if bytesPerSec == 0 {
		return nil
	}
	return rate.NewLimiter(rate.Limit(bytesPerSec), int(max(bytesPerSec/10, 256<<10)))
}

// Read calls fn with every pair of the file at path whose key is in
// [start, end) (end empty: no bound), in key order; k and v are valid
// only during the call. fn's error stops the read and is returned.
func Read(path string, start, end []byte, fn func(k, v []byte) error) error {
	f, err := vfs.Default.Open(path)
	if err != nil {
		return fmt.Errorf("%w: open %s: %w", ErrFile, path, err)
	}
	readable, err := sstable.NewSimpleReadable(f)
	if err != nil {
		f.Close()
		return fmt.Errorf("%w: open %s: %w", ErrFile, path, err)
	}
	r, err := sstable.NewReader(context.Background(), readable, sstable.ReaderOptions{})
	if err != nil {
		readable.Close()
		return fmt.Errorf("%w: read %s: %w", ErrFile, path, err)
	}
	defer r.Close()
	var upper []byte
	if len(end) > 0 {
		upper = end
	}
	it, err := r.NewIter(sstable.NoTransforms, start, upper, sstable.AssertNoBlobHandles)
	if err != nil {
		return fmt.Errorf("%w: read %s: %w", ErrFile, path, err)
	}
	defer it.Close()
	for kv := it.SeekGE(start, 0); kv != nil; kv = it.Next() {
		v, _, err := kv.Value(nil)
		if err != nil {
			return fmt.Errorf("%w: read %s: %w", ErrFile, path, err)
		}
		if err := fn(kv.K.UserKey, v); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("%w: read %s: %w", ErrFile, path, err)
	}
	return nil
}
