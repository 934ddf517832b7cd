//go:build amd64 && !noasm

package kernels

import (
	"golang.org/x/sys/cpu"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// The AVX-512 kernel set: the AVX2 set with the decode row kernels of the
// common weight types replaced by AVX-512 (BW, VL, VNNI) ones
// (rows_avx512_amd64.s). Token tiles of four and eight (prefill, batched
// decode) stay on the AVX2 tiles; every kernel does the same float
// operations per (row, token), so mixing them keeps I8.

//go:noescape
func q40RowsZ(w *byte, rowBytes, rows int, xq *int8, xd *float32, nb int, out *float32)

//go:noescape
func q4kRowsZ(out *float32, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb int)

//go:noescape
func q4kRows2Z(out *float32, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb, h int)

//go:noescape
func q4kRows4Z(out *float32, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb, outStride int)

// has512 reports whether the CPU (and OS, which must save the 512-bit
// state) supports the instructions of rows_avx512_amd64.s.
func has512() bool {
	x := cpu.X86
	return x.HasAVX2 && x.HasFMA && x.HasF16C &&
		x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL && x.HasAVX512VNNI
}

// avx512Name names the AVX-512 set; using512 reports whether it is the set
// in use, which decides the layouts only it reads (the packed F16 copy,
// the Q8_0 block sums) and the FMA probe's width.
const avx512Name = "avx512"

func using512() bool { return impl.name == avx512Name }

var avx512Kernels = func() kernelSet {
	k := avx2Kernels
	k.name = avx512Name
	k.rows = rowsFast512
	return k
}()

// rowsFast512 is rowsFast with the AVX-512 row kernels where there are.
func rowsFast512(t gguf.Type, cols int) rowKernel {
	if cols == 0 {
		return rowsRef
	}
	switch t {
	case gguf.Q4_0:
		return rowsQ8Z
	case gguf.Q4_K:
		return rowsKZ
	case gguf.Q6_K:
		return rowsK6Z
	case gguf.F16:
		return rowsF16Z
	}
	return rowsFast(t, cols)
}

// kQ4KScl are q4kRowsZ's scale-decoding constants (dwords): the right
// shifts of [a, c, m, c] and of [a, a, m, m], then their masks.
var kQ4KScl = [16]uint32{
	0, 0, 0, 4,
	0, 2, 0, 2,
	0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f,
	0, 0x30303030, 0, 0x30303030,
}

// rowsQ8Z computes Q4_0 rows [r0,r1): the tokens that fill tiles of
// four or eight through rowsQ8's tiles, the others one token at a time
// against all rows with q40RowsZ. (Q8_0 has its packed kernels, rowsQ8P.)
func rowsQ8Z(out []float32, m *Matrix, a *activation, r0, r1 int) {
	full := a.batch &^ (tile - 1)
	if full > 0 {
		sub := *a
		sub.batch = full
		rowsQ8(out, m, &sub, r0, r1)
	}
	if r1 <= r0 {
		return
	}
	nb := a.cols / 32
	rb := m.rowBytes()
	for b := full; b < a.batch; b++ {
		xq, xd, o := &a.qs[b*a.cols], &a.d[b*nb], &out[b*m.Rows+r0]
		q40RowsZ(&m.Data[r0*rb], rb, r1-r0, xq, xd, nb, o)
	}
}

// rowsKZ is rowsK for Q4_K with the AVX-512 kernels for batches up to
// kFusedMaxBatch, over the chunk's rows (which stay in cache): four
// tokens at a time through q4kRows4Z, then one at a time (in rowStreams
// streams). Larger batches take rowsK's unpacked path.
func rowsKZ(out []float32, m *Matrix, a *activation, r0, r1 int) {
	if a.batch > kFusedMaxBatch || r1 <= r0 {
		rowsK(out, m, a, r0, r1)
		return
	}
	nsb := a.cols / 256
	rb := m.rowBytes()
	w := &m.Data[r0*rb]
	t := 0
	for ; t+4 <= a.batch; t += 4 {
		q4kRows4Z(&out[t*m.Rows+r0], w, rb, r1-r0, &a.qs[t*a.cols], &a.d[t*nsb], &a.bsum[t*a.cols/16], nsb, 4*m.Rows)
	}
	for ; t < a.batch; t++ {
		xq, xd, bs := &a.qs[t*a.cols], &a.d[t*nsb], &a.bsum[t*a.cols/16]
		q4kRowsStreams(out[t*m.Rows+r0:t*m.Rows+r1], m.Data[r0*rb:r1*rb], rb, xq, xd, bs, nsb)
	}
}

// q4kRowsStreams is kRowsStreams for q4kRowsZ, with two streams in one
// call (q4kRows2Z): rows i and h+i side by side, no call per row (which
// cost 13% in cache: BenchmarkRowKernelsInCache/Q4_K/b1).
func q4kRowsStreams(out []float32, w []byte, rb int, xq *int8, xd *float32, bs *int16, nsb int) {
	n := len(out)
	if rowStreams < 2 || n < 2 {
		q4kRowsZ(&out[0], &w[0], rb, n, xq, xd, bs, nsb)
		return
	}
	h := n / 2
	q4kRows2Z(&out[0], &w[0], rb, h, xq, xd, bs, nsb, h)
	if n%2 == 1 {
		q4kRowsZ(&out[n-1], &w[(n-1)*rb], rb, 1, xq, xd, bs, nsb)
	}
}

//go:noescape
func q6kRows4Z(out *float32, outStride int, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb, xqStride, xdStride, bsStride int)

//go:noescape
func q6kRowsZ(out *float32, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb int)

// kQ6KZ are q6kRowsZ's constants, 64 bytes each: the qh byte masks of a
// half's two steps, their word shift counts (left, right), and the four
// steps' VPERMW indices of the sub-block scales (step s covers sub-blocks
// 4s..4s+3, eight words each).
var kQ6KZ = func() (k [8][32]uint16) {
	for i := 0; i < 32; i++ {
		first := i < 16 // the lower 256 bits
		k[0][i], k[1][i], k[2][i], k[3][i] = 0x0c0c, 0xc0c0, 2, 2
		if first {
			k[0][i], k[1][i], k[2][i], k[3][i] = 0x0303, 0x3030, 4, 0
		}
		for s := 0; s < 4; s++ {
			k[4+s][i] = uint16(4*s + i/8)
		}
	}
	return k
}()

// rowsK6Z is rowsKFused for Q6_K with the AVX-512 kernels: four tokens
// per pass (q6kRows4Z), then one at a time (q6kRowsZ, in rowStreams
// streams).
func rowsK6Z(out []float32, m *Matrix, a *activation, r0, r1 int) {
	if a.batch > kFusedMaxBatch || r1 <= r0 {
		rowsK(out, m, a, r0, r1)
		return
	}
	nsb := a.cols / 256
	rb := m.rowBytes()
	t := 0
	for ; t+4 <= a.batch; t += 4 {
		q6kRows4Z(&out[t*m.Rows+r0], 4*m.Rows, &m.Data[r0*rb], rb, r1-r0, &a.qs[t*a.cols], &a.d[t*nsb],
			&a.bsum[t*a.cols/16], nsb, a.cols, 4*nsb, 2*(a.cols/16))
	}
	for ; t < a.batch; t++ {
		xq, xd, bs := &a.qs[t*a.cols], &a.d[t*nsb], &a.bsum[t*a.cols/16]
		kRowsStreams(q6kRowsZ, out[t*m.Rows+r0:t*m.Rows+r1], m.Data[r0*rb:r1*rb], rb, xq, xd, bs, nsb)
	}
}
