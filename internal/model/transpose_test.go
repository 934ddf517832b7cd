package model

import (
	"math/rand/v2"
	"testing"
)

// TestTranspose16MatchesElementCopy checks the blocked transpose against
// the element-by-element copy it replaces (the assembly 8×8 blocks and the
// edges they leave), for block shapes that are and
// are not multiples of four, with strides wider than the block, and that it
// writes nothing outside the block.
func TestTranspose16MatchesElementCopy(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sh := range []struct{ rows, cols, srcExtra, dstExtra int }{
		{16, 64, 128, 3}, {16, 64, 0, 0}, {1, 1, 0, 0}, {3, 5, 2, 1}, {7, 64, 128, 9}, {8, 8, 0, 0}, {9, 17, 5, 3}, {24, 40, 1, 1}, {15, 9, 0, 7},
		{16, 63, 1, 0}, {5, 4, 0, 0}, {4, 7, 3, 2}, {13, 80, 176, 5}, {0, 4, 0, 0},
	} {
		srcStride, dstStride := sh.cols+sh.srcExtra, sh.rows+sh.dstExtra
		src := make([]uint16, max(1, sh.rows*srcStride))
		for i := range src {
			src[i] = uint16(rng.Uint32())
		}
		got := make([]uint16, max(1, sh.cols*dstStride)+8)
		want := make([]uint16, len(got))
		for i := range got {
			got[i] = 0xdead
			want[i] = 0xdead
		}
		transpose16(got, dstStride, src, srcStride, sh.rows, sh.cols)
		for j := 0; j < sh.rows; j++ {
			for d := 0; d < sh.cols; d++ {
				want[d*dstStride+j] = src[j*srcStride+d]
			}
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("rows %d cols %d strides %d/%d: element %d = %#x, want %#x", sh.rows, sh.cols, srcStride, dstStride, i, got[i], want[i])
			}
		}
	}
}

// BenchmarkTranspose16Page transposes the values of one 16-slot page of one
// KV head (64 dimensions, smollm2's 192-wide KV rows) into Vᵀ rows of a
// 320-position group, as gather does per page; ref is the element-by-element
// copy gather did before.
func BenchmarkTranspose16Page(b *testing.B) {
	src := make([]uint16, 16*192)
	dst := make([]uint16, 64*320)
	for _, v := range []struct {
		name string
		fn   func(dst []uint16, dstStride int, src []uint16, srcStride, rows, cols int)
	}{{"fast", transpose16}, {"ref", transpose16Ref}} {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(2 * 16 * 64)
			for b.Loop() {
				v.fn(dst[64:], 320, src[64:], 192, 16, 64)
			}
		})
	}
}
