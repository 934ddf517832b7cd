//go:build amd64 && !noasm

package kernels

import (
	"sync"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

//go:noescape
func q5kRows(out *float32, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb int)

//go:noescape
func kDotS(q *byte, sv *int16, dv *float32, xq *int8, xd *float32, nsb int) float32

// Row kernels of the types added after the first seven: fused assembly for
// Q4_1, Q5_0, Q5_1, IQ4_NL and Q5_K; Q2_K, Q3_K and IQ4_XS rows are
// unpacked in Go (decodeK) into kDotU's (unsigned, Q2_K) or kDotS's
// (signed, Q3_K/IQ4_XS) operands.

// xScratch is the unpacked row of one work item, recycled.
type xScratch struct {
	k  kBlock
	q  []byte
	sv []int16
	mv []int16
	dv []float32
}

var xScratchPool = sync.Pool{New: func() any { return new(xScratch) }}

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

// rowsKx computes rows [r0,r1) of a Q2_K, Q3_K, Q5_K or IQ4_XS matrix:
// each row is decoded once (decodeK) and met with every token.
func rowsKx(out []float32, m *Matrix, a *activation, r0, r1 int) {
	nsb := a.cols / 256
	if m.Type == gguf.Q5_K {
		// Fused decode in registers for every batch: re-decoding a row per
		// token costs less than unpacking it in Go once.
		// Tokens innermost over ≈32 KiB of rows, so the rows stay in cache
		// across the batch.
		rb := m.rowBytes()
		step := max(1, (32<<10)/rb)
		for rr := r0; rr < r1; rr += step {
			n := min(step, r1-rr)
			for t := 0; t < a.batch; t++ {
				q5kRows(&out[t*m.Rows+rr], &m.Data[rr*rb], rb, n, &a.qs[t*a.cols], &a.d[t*nsb], &a.bsum[t*a.cols/16], nsb)
			}
		}
		return
	}
	sc := xScratchPool.Get().(*xScratch)
	defer xScratchPool.Put(sc)
	sc.q, sc.sv = grow(sc.q, 256*nsb), grow(sc.sv, 128*nsb)
	sc.mv, sc.dv = grow(sc.mv, 16*nsb), grow(sc.dv, 2*nsb)
	signed := signedK(m.Type)
	bb := m.Type.BlockBytes()
	k := &sc.k
	for r := r0; r < r1; r++ {
		row := m.row(r)
		for b := 0; b < nsb; b++ {
			decodeK(m.Type, row[bb*b:bb*(b+1)], k)
			for i, v := range k.q {
				sc.q[256*b+i] = byte(v)
			}
			v := sc.sv[128*b : 128*b+128]
			for g := 0; g < 8; g++ {
				lo, hi := int16(k.sv[2*g]), int16(k.sv[2*g+1])
				for l := 0; l < 8; l++ {
					v[16*g+l], v[16*g+8+l] = lo, hi
				}
			}
			for j := 0; j < 16; j++ {
				sc.mv[16*b+j] = int16(k.mv[j])
			}
			sc.dv[2*b], sc.dv[2*b+1] = k.dw, k.dmw
		}
		for t := 0; t < a.batch; t++ {
			xq, xd := &a.qs[t*a.cols], &a.d[t*nsb]
			if signed {
				out[t*m.Rows+r] = kDotS(&sc.q[0], &sc.sv[0], &sc.dv[0], xq, xd, nsb)
			} else {
				out[t*m.Rows+r] = kDotU(&sc.q[0], &sc.sv[0], &sc.mv[0], &sc.dv[0],
					xq, xd, &a.bsum[t*a.cols/16], nsb)
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
