package gguf

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

func TestDigestWithReportsEveryByteAndMatchesDigest(t *testing.T) {
	data := make([]byte, 2*digestChunk+123)
	for i := range data {
		data[i] = byte(i * 7)
	}
	f := &File{data: data}
	total, calls := 0, 0
	got := f.DigestWith(func(n int) { total += n; calls++ })
	sum := sha256.Sum256(data)
	if want := hex.EncodeToString(sum[:]); got != want || f.Digest() != want {
		t.Fatalf("digest %s, want %s", got, want)
	}
	if total != len(data) || calls != 3 {
		t.Fatalf("progress reported %d bytes in %d calls, want %d in 3", total, calls, len(data))
	}
}
