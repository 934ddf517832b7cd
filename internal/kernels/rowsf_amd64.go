//go:build amd64 && !noasm

package kernels

import "github.com/bulkhead-llm/bulkhead/internal/gguf"

//go:noescape
func f16Dot1(w *byte, x *float32, n int) float32

//go:noescape
func f16Dot4(w *byte, x *float32, n, xstride int, out *float32)

//go:noescape
func f16Dot2x4(w *byte, wstride int, x *float32, n, xstride int, out *float32)

//go:noescape
func f32Dot1(w *byte, x *float32, n int) float32

//go:noescape
func f32Dot4(w *byte, x *float32, n, xstride int, out *float32)

//go:noescape
func f32Dot2x4(w *byte, wstride int, x *float32, n, xstride int, out *float32)

//go:noescape
func bf16Dot1(w *byte, x *float32, n int) float32

//go:noescape
func bf16Dot4(w *byte, x *float32, n, xstride int, out *float32)

//go:noescape
func bf16Dot2x4(w *byte, wstride int, x *float32, n, xstride int, out *float32)

//go:noescape
func f16Dot3x4(w *byte, wstride int, x *float32, n, xstride int, out *float32)

//go:noescape
func f32Dot3x4(w *byte, wstride int, x *float32, n, xstride int, out *float32)

//go:noescape
func bf16Dot3x4(w *byte, wstride int, x *float32, n, xstride int, out *float32)

//go:noescape
func f16DotQuarters(w *byte, wstride int, x *float32, n, rows int, out *float32)

//go:noescape
func f32DotQuarters(w *byte, wstride int, x *float32, n, rows int, out *float32)

//go:noescape
func bf16DotQuarters(w *byte, wstride int, x *float32, n, rows int, out *float32)

//go:noescape
func f16DotHalves(w *byte, wstride int, x *float32, n, rows int, out *float32)

//go:noescape
func f32DotHalves(w *byte, wstride int, x *float32, n, rows int, out *float32)

//go:noescape
func bf16DotHalves(w *byte, wstride int, x *float32, n, rows int, out *float32)

// The kernels are called directly (not through function values) so that
// escape analysis keeps the result arrays on the stack.

func fTile1(t gguf.Type, w *byte, x *float32, n int) float32 {
	switch t {
	case gguf.F16:
		return f16Dot1(w, x, n)
	case gguf.BF16:
		return bf16Dot1(w, x, n)
	}
	return f32Dot1(w, x, n)
}

func fTile4(t gguf.Type, w *byte, x *float32, n, xstride int, out *float32) {
	switch t {
	case gguf.F16:
		f16Dot4(w, x, n, xstride, out)
	case gguf.BF16:
		bf16Dot4(w, x, n, xstride, out)
	default:
		f32Dot4(w, x, n, xstride, out)
	}
}

func fHalves(t gguf.Type, w *byte, wstride int, x *float32, n, rows int, out *float32) {
	switch t {
	case gguf.F16:
		f16DotHalves(w, wstride, x, n, rows, out)
	case gguf.BF16:
		bf16DotHalves(w, wstride, x, n, rows, out)
	default:
		f32DotHalves(w, wstride, x, n, rows, out)
	}
}

// quartersMaxBytes bounds the matrices whose rows go four at a time
// (fQuarters) instead of two (fHalves), the last rows of a run one by one: those that fit in L2, such as
// attention's per-head keys and values, whose products are bound by the
// FMA chains' latency. A weight matrix streamed from memory keeps two
// streams: on the Zen 4 host of issue 12, 135M F16 decode was slower in
// four quarters than in two halves.
const quartersMaxBytes = 256 << 10

func fQuarters(t gguf.Type, w *byte, wstride int, x *float32, n, rows int, out *float32) {
	switch t {
	case gguf.F16:
		f16DotQuarters(w, wstride, x, n, rows, out)
	case gguf.BF16:
		bf16DotQuarters(w, wstride, x, n, rows, out)
	default:
		f32DotQuarters(w, wstride, x, n, rows, out)
	}
}

func fTile2x4(t gguf.Type, w *byte, wstride int, x *float32, n, xstride int, out *float32) {
	switch t {
	case gguf.F16:
		f16Dot2x4(w, wstride, x, n, xstride, out)
	case gguf.BF16:
		bf16Dot2x4(w, wstride, x, n, xstride, out)
	default:
		f32Dot2x4(w, wstride, x, n, xstride, out)
	}
}

func fTile3x4(t gguf.Type, w *byte, wstride int, x *float32, n, xstride int, out *float32) {
	switch t {
	case gguf.F16:
		f16Dot3x4(w, wstride, x, n, xstride, out)
	case gguf.BF16:
		bf16Dot3x4(w, wstride, x, n, xstride, out)
	default:
		f32Dot3x4(w, wstride, x, n, xstride, out)
	}
}

// rowMultiple is the row count MatMul's chunks are rounded up to, so a
// chunk holds whole row tiles: three for rowsFloat's 3×4 tile (a chunk of
// 28 rows ran its last row through the 1×4 tile, half as fast: 5% of a
// 135M F16 prefill).
func rowMultiple(t gguf.Type, a *activation) int {
	switch t {
	case gguf.Q8_0:
		if len(a.xs) > 0 {
			return 16 // pairs of packed groups (q8pDot4Z)
		}
		return 8 // packed groups (rowsQ8P)
	case gguf.F16, gguf.BF16, gguf.F32:
		if a.gp.groups == 0 && a.batch >= tile {
			return 3
		}
		if t == gguf.F16 && a.batch < tile {
			return 4 // packed groups (rowsF16Z)
		}
	}
	return 1
}

// rowsFloat covers rows [r0,r1) × all tokens of F16/BF16/F32 weights with
// the largest tiles that fit — 3 rows × 4 tokens, 2 × 4, 1 × 4, then for the
// remaining tokens 4 rows × 1 and 1 × 1 — all doing the same per-(row,
// token) operations. (The 4 × 1 tile gives decode four independent FMA
// chains; with one chain a row F16 decode was bound by FMA latency.)
// Columns past the last multiple of eight are finished as in dotFloatRef.
func rowsFloat(out []float32, m *Matrix, a *activation, r0, r1 int) {
	n8 := a.cols &^ 7
	rb := m.rowBytes()
	tail := n8 != a.cols
	put := func(r, b int, s float32) {
		if tail {
			s = floatTail(m, a, r, b, n8, s)
		}
		out[b*m.Rows+r] = s
	}
	var res [12]float32
	b := 0
	for ; b+tile <= a.batch; b += tile {
		x := &a.x[b*a.cols]
		r := r0
		for ; r+3 <= r1; r += 3 {
			fTile3x4(m.Type, &m.Data[r*rb], rb, x, n8, 4*a.cols, &res[0])
			for t := 0; t < tile; t++ {
				if tail {
					put(r, b+t, res[t])
					put(r+1, b+t, res[4+t])
					put(r+2, b+t, res[8+t])
					continue
				}
				o := out[(b+t)*m.Rows+r:]
				o[0], o[1], o[2] = res[t], res[4+t], res[8+t]
			}
		}
		for ; r+2 <= r1; r += 2 {
			fTile2x4(m.Type, &m.Data[r*rb], rb, x, n8, 4*a.cols, &res[0])
			if tail {
				for t := 0; t < tile; t++ {
					put(r, b+t, res[t])
					put(r+1, b+t, res[4+t])
				}
				continue
			}
			// No column tail (attention's head rows, most weights):
			// plain stores, no call per result.
			o := out[b*m.Rows+r:]
			o[0], o[1] = res[0], res[4]
			o[m.Rows], o[m.Rows+1] = res[1], res[5]
			o[2*m.Rows], o[2*m.Rows+1] = res[2], res[6]
			o[3*m.Rows], o[3*m.Rows+1] = res[3], res[7]
		}
		for ; r < r1; r++ {
			fTile4(m.Type, &m.Data[r*rb], x, n8, 4*a.cols, &res[0])
			for t := 0; t < tile; t++ {
				put(r, b+t, res[t])
			}
		}
	}
	for ; b < a.batch; b++ {
		x := &a.x[b*a.cols]
		r := r0
		step := 2 // rows per pass: fHalves, or fQuarters in cache
		if len(m.Data) <= quartersMaxBytes {
			step = 4
		}
		if k := (r1 - r0) &^ (step - 1); k > 0 && n8 > 0 {
			o := out[b*m.Rows : (b+1)*m.Rows]
			if step == 4 {
				fQuarters(m.Type, &m.Data[r*rb], rb, x, n8, k, &o[r])
			} else {
				fHalves(m.Type, &m.Data[r*rb], rb, x, n8, k, &o[r])
			}
			if n8 != a.cols { // only a column tail needs put's pass
				for i := r; i < r+k; i++ {
					put(i, b, o[i])
				}
			}
			r += k
		}
		for ; r < r1; r++ {
			put(r, b, fTile1(m.Type, &m.Data[r*rb], x, n8))
		}
	}
}

// floatTail continues result s of row r and token b over the columns past
// the last multiple of eight, as dotFloatRef does.
func floatTail(m *Matrix, a *activation, r, b, n8 int, s float32) float32 {
	w := m.row(r)
	x := a.x[b*a.cols : (b+1)*a.cols]
	for i := n8; i < a.cols; i++ {
		s = fma32(weightAt(m.Type, w, i), x[i], s)
	}
	return s
}
