package keys

import (
	"bytes"
	"testing"
)

func TestVersionsInsideRegionBounds(t *testing.T) {
	for _, cf := range CFs {
		lo, hi := CFBounds(cf, []byte("b"), []byte("c"))
		cases := []struct {
			key    []byte
			inside bool
		}{
			{EngineKey(nil, cf, EncodeVersioned(nil, []byte("b"), 1)), true},
			{EngineKey(nil, cf, EncodeVersioned(nil, []byte("b\xff\xff"), ^uint64(0))), true},
			{EngineKey(nil, cf, Encode(nil, []byte("bz"))), true},
			{EngineKey(nil, cf, EncodeVersioned(nil, []byte("a\xff"), 0)), false},
			{EngineKey(nil, cf, EncodeVersioned(nil, []byte("c"), ^uint64(0))), false},
		}
		for _, c := range cases {
			in := bytes.Compare(c.key, lo) >= 0 && bytes.Compare(c.key, hi) < 0
			if in != c.inside {
				t.Errorf("cf %v key %x: inside=%v, want %v", cf, c.key, in, c.inside)
			}
		}
	}
}

func TestDecodeVersioned(t *testing.T) {
	k, ts, err := DecodeVersioned(EncodeVersioned(nil, []byte("t1_r\x00x"), 42), nil)
	if err != nil || string(k) != "t1_r\x00x" || ts != 42 {
		t.Fatalf("got %q %d %v", k, ts, err)
	}
	if _, _, err := DecodeVersioned(append(EncodeVersioned(nil, []byte("a"), 1), 0), nil); err == nil {
		t.Fatal("trailing byte accepted")
	}
}
