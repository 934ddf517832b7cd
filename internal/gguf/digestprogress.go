package gguf

import (
	"crypto/sha256"
	"encoding/hex"
)

// digestChunk is how many bytes DigestWith hashes between two reports.
const digestChunk = 16 << 20

// DigestWith is Digest, calling progress with the number of bytes hashed
// after each chunk, so a multi-gigabyte model shows its hashing advance.
// Later calls (and Digest) return the cached digest without reporting.
func (f *File) DigestWith(progress func(n int)) string {
	f.digestOnce.Do(func() {
		h := sha256.New()
		for off := 0; off < len(f.data); off += digestChunk {
			end := min(off+digestChunk, len(f.data))
			h.Write(f.data[off:end])
			if progress != nil {
				progress(end - off)
			}
		}
		f.digest = hex.EncodeToString(h.Sum(nil))
	})
	return f.digest
}
