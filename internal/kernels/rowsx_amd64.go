//go:build amd64 && !noasm

package kernels

import (
	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

//go:noescape
func q5kRows(out *float32, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb int)

//go:noescape
func iq4xsRows(out *float32, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb int)

//go:noescape
func q3kRows(out *float32, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb int)

//go:noescape
func q2kRows(out *float32, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb int)

// Fused AVX2 row kernels of the types added after the first seven: each
// decodes its blocks in registers to the integers decodeQ32/decodeK give
// and computes dotQ32Ref/dotKRef's lanes and float steps.

// rowsQ32 computes rows [r0,r1) of a Q4_1, Q5_0, Q5_1 or IQ4_NL matrix
// with the fused row kernels (matx32_amd64.s), token by token over ≈32 KiB
// of rows at a time, so the rows stay in cache across the batch. (Measured:
// converting each row to Q8_0 once for the Q8_0 tiles was slower at batch
// 64, the conversion being Go.)
func rowsQ32(out []float32, m *Matrix, a *activation, r0, r1 int) {
	nb := a.cols / 32
	rb := m.rowBytes()
	step := max(1, (32<<10)/rb)
	for rr := r0; rr < r1; rr += step {
		n := min(step, r1-rr)
		for t := 0; t < a.batch; t++ {
			w, xq, xd, o := &m.Data[rr*rb], &a.qs[t*a.cols], &a.d[t*nb], &out[t*m.Rows+rr]
			switch m.Type {
			case gguf.Q5_0:
				q50Rows(w, rb, n, xq, xd, xd, nb, o)
			case gguf.IQ4_NL:
				iq4nlRows(w, rb, n, xq, xd, xd, nb, o)
			case gguf.Q4_1:
				q41Rows(w, rb, n, xq, xd, &a.s[t*nb], nb, o)
			case gguf.Q5_1:
				q51Rows(w, rb, n, xq, xd, &a.s[t*nb], nb, o)
			}
		}
	}
}

// rowsKx computes rows [r0,r1) of a Q2_K, Q3_K, Q5_K or IQ4_XS matrix
// with the fused kernels (matk5_amd64.s, matkx_amd64.s), token by token
// over ≈32 KiB of rows at a time, so the rows stay in cache across the
// batch.
func rowsKx(out []float32, m *Matrix, a *activation, r0, r1 int) {
	nsb := a.cols / 256
	rb := m.rowBytes()
	step := max(1, (32<<10)/rb)
	for rr := r0; rr < r1; rr += step {
		n := min(step, r1-rr)
		for t := 0; t < a.batch; t++ {
			o, w := &out[t*m.Rows+rr], &m.Data[rr*rb]
			xq, xd, bs := &a.qs[t*a.cols], &a.d[t*nsb], &a.bsum[t*a.cols/16]
			switch m.Type {
			case gguf.Q5_K:
				q5kRows(o, w, rb, n, xq, xd, bs, nsb)
			case gguf.IQ4_XS:
				iq4xsRows(o, w, rb, n, xq, xd, bs, nsb)
			case gguf.Q3_K:
				q3kRows(o, w, rb, n, xq, xd, bs, nsb)
			case gguf.Q2_K:
				q2kRows(o, w, rb, n, xq, xd, bs, nsb)
			}
		}
	}
}

//go:noescape
func q50Rows(w *byte, rowBytes, rows int, xq *int8, xd, xs *float32, nb int, out *float32)

//go:noescape
func iq4nlRows(w *byte, rowBytes, rows int, xq *int8, xd, xs *float32, nb int, out *float32)

//go:noescape
func q41Rows(w *byte, rowBytes, rows int, xq *int8, xd, xs *float32, nb int, out *float32)

//go:noescape
func q51Rows(w *byte, rowBytes, rows int, xq *int8, xd, xs *float32, nb int, out *float32)

// x32Consts are the per-type constants of the 32-block row kernels, 32
// bytes each: 0xf0 (Q5_0's high bits for a clear qh bit), the IQ4_NL
// codebook in both 128-bit lanes, 0x10 (Q5_1's fifth bit).
var x32Consts = func() (c [96]byte) {
	for i := 0; i < 32; i++ {
		c[i] = 0xf0
		c[32+i] = byte(iq4nlValues[i%16])
		c[64+i] = 0x10
	}
	return c
}()

// x32Spread spreads the 32 qh bits to bytes: the byte shuffle (byte i takes
// qh byte i/8, within each 128-bit lane) and the mask with all bits but
// bit i%8 set, which makes byte i all ones exactly when its bit is set.
var x32Spread = func() (c [64]byte) {
	for i := 0; i < 32; i++ {
		c[i] = byte(i / 8) // the dword is broadcast, so each lane holds all four bytes
		c[32+i] = ^byte(1 << (i % 8))
	}
	return c
}()
