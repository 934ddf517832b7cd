//go:build amd64 && !noasm

package kernels

import (
	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

//go:noescape
func q8Dot1(w *byte, xq *int8, xd *float32, nb int) float32

//go:noescape
func q8Dot4(w *byte, xq *int8, xd *float32, nb, xqStride, xdStride int, out *float32)

//go:noescape
func q8DotRows(w *byte, rowBytes, rows int, xq *int8, xd *float32, nb int, out *float32)

//go:noescape
func q40Dot1(w *byte, xq *int8, xd *float32, nb int) float32

//go:noescape
func q40Dot4(w *byte, xq *int8, xd *float32, nb, xqStride, xdStride int, out *float32)

//go:noescape
func q8Dot8(w *byte, xq *int8, xdT *float32, nb, xqStride int, out *float32, sc *float32)

//go:noescape
func q40Dot8(w *byte, xq *int8, xdT *float32, nb, xqStride int, out *float32, sc *float32)

// q40Consts are the Q4_0 nibble mask and offset, read from memory by
// q40Dot8 (which has no registers to spare for them).
var q40Consts = [64]byte{
	0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f,
	0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f,
	8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8,
	8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8,
}

// The kernels are called directly (not through function values) so that
// escape analysis keeps the result arrays on the stack.

func q8Tile1(t gguf.Type, w *byte, xq *int8, xd *float32, nb int) float32 {
	if t == gguf.Q8_0 {
		return q8Dot1(w, xq, xd, nb)
	}
	return q40Dot1(w, xq, xd, nb)
}

func q8Tile4(t gguf.Type, w *byte, xq *int8, xd *float32, nb, xqStride, xdStride int, out *float32) {
	if t == gguf.Q8_0 {
		q8Dot4(w, xq, xd, nb, xqStride, xdStride, out)
	} else {
		q40Dot4(w, xq, xd, nb, xqStride, xdStride, out)
	}
}

func q8Tile8(t gguf.Type, w *byte, xq *int8, xdT *float32, nb, xqStride int, out, sc *float32) {
	if t == gguf.Q8_0 {
		q8Dot8(w, xq, xdT, nb, xqStride, out, sc)
	} else {
		q40Dot8(w, xq, xdT, nb, xqStride, out, sc)
	}
}

// scalePool holds the eight-token tile's scale products (8 per block),
// one buffer per rowsQ8 call.
var scalePool freeList[[]float32]

// rowsQ8 runs the Q8_0/Q4_0 kernels over rows [r0,r1): token tiles of
// eight, then four, then single tokens, outermost so the chunk's weight
// rows stay in cache across tiles.
func rowsQ8(out []float32, m *Matrix, a *activation, r0, r1 int) {
	nb := a.cols / 32
	rb := m.rowBytes()
	var res [8]float32
	b := 0
	if a.batch >= 8 {
		sc := scalePool.get()
		defer scalePool.put(sc)
		*sc = grow(*sc, 8*nb)
		for ; b+8 <= a.batch; b += 8 {
			xq, xdT := &a.qs[b*a.cols], &a.dT[b/8*nb*8]
			for r := r0; r < r1; r++ {
				q8Tile8(m.Type, &m.Data[r*rb], xq, xdT, nb, a.cols, &res[0], &(*sc)[0])
				for t := 0; t < 8; t++ {
					out[(b+t)*m.Rows+r] = res[t]
				}
			}
		}
	}
	for ; b+tile <= a.batch; b += tile {
		xq, xd := &a.qs[b*a.cols], &a.d[b*nb]
		for r := r0; r < r1; r++ {
			q8Tile4(m.Type, &m.Data[r*rb], xq, xd, nb, a.cols, 4*nb, &res[0])
			for t := 0; t < tile; t++ {
				out[(b+t)*m.Rows+r] = res[t]
			}
		}
	}
	for ; b < a.batch; b++ {
		xq, xd := &a.qs[b*a.cols], &a.d[b*nb]
		if m.Type == gguf.Q8_0 && r1 > r0 {
			q8DotRows(&m.Data[r0*rb], rb, r1-r0, xq, xd, nb, &out[b*m.Rows+r0])
			continue
		}
		for r := r0; r < r1; r++ {
			out[b*m.Rows+r] = q8Tile1(m.Type, &m.Data[r*rb], xq, xd, nb)
		}
	}
}
