//go:build !amd64 || noasm

package kernels

import "encoding/binary"

// probeRead folds every 8-byte word of b (reading two bytes of each
// word missed the others: TestReadStreamTouchesEveryBlock).
func probeRead(b []byte) uint64 {
	var x uint64
	for i := 0; i+8 <= len(b); i += 8 {
		x ^= binary.LittleEndian.Uint64(b[i:])
	}
	return x
}

func probeFMA(iters int) (float32, float64) {
	a, b, c, d := float32(1e-3), float32(2e-3), float32(3e-3), float32(4e-3)
	for i := 0; i < iters; i++ {
		a = fma32(a, 0.99998, 1e-3)
		b = fma32(b, 0.99998, 1e-3)
		c = fma32(c, 0.99998, 1e-3)
		d = fma32(d, 0.99998, 1e-3)
	}
	return a + b + c + d, float64(iters) * 8
}

// FMAProbeBits is the width of FMAPeak's fused multiply-adds: scalar Go.
func FMAProbeBits() int { return 32 }
