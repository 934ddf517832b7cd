package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestCPUProfileWritesAProfile starts and stops serve's CPU profile and
// expects the gzip-compressed protobuf `go tool pprof` reads; a path that
// cannot be created is an error at start, not a silent run without one.
func TestCPUProfileWritesAProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.prof")
	stop, err := startCPUProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		t.Fatalf("%s holds %d bytes, not a gzip-compressed profile", path, len(b))
	}
	if _, err := startCPUProfile(filepath.Join(t.TempDir(), "missing", "cpu.prof")); err == nil {
		t.Fatal("a profile path in a missing directory started without an error")
	}
}
