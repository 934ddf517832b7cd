package kernels

import (
	"encoding/binary"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// This file is the definition of every (row, token) dot product: the
// assembly reproduces these operations, in this order, bit for bit.

// dotFloatRef is the dot product of one F32, F16 or BF16 row with x.
func dotFloatRef(t gguf.Type, w []byte, x []float32) float32 {
	var acc [8]float32
	n := len(x)
	i := 0
	for ; i+8 <= n; i += 8 {
		for l := 0; l < 8; l++ {
			acc[l] = fma32(weightAt(t, w, i+l), x[i+l], acc[l])
		}
	}
	s := hsum8(&acc)
	for ; i < n; i++ {
		s = fma32(weightAt(t, w, i), x[i], s)
	}
	return s
}

func weightAt(t gguf.Type, w []byte, i int) float32 {
	switch t {
	case gguf.F16:
		return F16ToF32(binary.LittleEndian.Uint16(w[2*i:]))
	case gguf.BF16:
		return BF16ToF32(binary.LittleEndian.Uint16(w[2*i:]))
	}
	return float32frombytes(w[4*i:])
}

// decodeQ32 writes the 32 integer weights of one 32-value block (Q8_0,
// Q4_0, Q5_0, IQ4_NL signed; Q4_1, Q5_1 unsigned, their min returned in m)
// and returns its F16 scale: weight = d×q (+ m).
func decodeQ32(t gguf.Type, blk []byte, q *[32]int8) (d, m float32) {
	switch t {
	case gguf.Q8_0:
		for i := range q {
			q[i] = int8(blk[2+i])
		}
	case gguf.Q4_0:
		for j := 0; j < 16; j++ {
			q[j] = int8(blk[2+j]&15) - 8
			q[j+16] = int8(blk[2+j]>>4) - 8
		}
	case gguf.IQ4_NL:
		for j := 0; j < 16; j++ {
			q[j] = iq4nlValues[blk[2+j]&15]
			q[j+16] = iq4nlValues[blk[2+j]>>4]
		}
	case gguf.Q4_1:
		for j := 0; j < 16; j++ {
			q[j] = int8(blk[4+j] & 15)
			q[j+16] = int8(blk[4+j] >> 4)
		}
		m = f16At(blk, 2)
	case gguf.Q5_0, gguf.Q5_1:
		off, bias := 2, int8(16)
		if t == gguf.Q5_1 {
			off, bias, m = 4, 0, f16At(blk, 2)
		}
		qh := binary.LittleEndian.Uint32(blk[off:])
		qs := blk[off+4:]
		for j := 0; j < 16; j++ {
			q[j] = int8(qs[j]&15|byte(qh>>j&1)<<4) - bias
			q[j+16] = int8(qs[j]>>4|byte(qh>>(j+16)&1)<<4) - bias
		}
	}
	return f16At(blk, 0), m
}

// dotQ32Ref is the dot product of one row of 32-value blocks with a token's
// activation blocks xq (int8), xd (scales) and, for Q4_1/Q5_1, xs (Q8_1's
// d×Σq). Per block, lane l takes the exact integer sum of elements
// 4l..4l+3, converted to float32 and multiplied into the lane accumulator
// with the scale d_w×d_x (ggml's AVX2 vec_dot: acc = fmadd(d, sumi, acc));
// the min term m_w×s_x goes to one scalar sum added after the lanes, as
// ggml's summs.
func dotQ32Ref(t gguf.Type, w []byte, xq []int8, xd, xs []float32) float32 {
	var acc [8]float32
	var q [32]int8
	var summs float32
	bb := t.BlockBytes()
	for b := range xd {
		d, m := decodeQ32(t, w[bb*b:bb*(b+1)], &q)
		s := d * xd[b]
		x := xq[32*b : 32*b+32]
		for l := 0; l < 8; l++ {
			var p int32
			for k := 4 * l; k < 4*l+4; k++ {
				p += int32(q[k]) * int32(x[k])
			}
			acc[l] = fma32(float32(p), s, acc[l])
		}
		if usesQ8_1(t) {
			summs = fma32(m, xs[b], summs)
		}
	}
	if usesQ8_1(t) {
		return hsum8(&acc) + summs
	}
	return hsum8(&acc)
}

// dotQ32Blocks is the dot product of one row of 32-value signed blocks
// (Q8_0; Q4_0 and IQ4_NL in MatMulGGMLRepack) with a token's Q8_0
// activation blocks: per block the exact integer sum of its 32 products,
// converted to float32, fused-multiplied into one accumulator with the
// rounded scale d_w×d_x. This is the order of llama.cpp's repacked x86
// kernels (q4_0_8x8 and kin: one accumulator per output, one step per
// block), and Q8_0's production order; llama.cpp's plain Q8_0 vec_dot is
// dotQ32Ref's eight lanes, which MatMulGGMLQ8 keeps for the comparisons
// with llama.cpp. One float step per block instead of eight lets the Q8_0
// row kernels put eight rows in the lanes of one vector (q8pack.go) with
// no convert or fused multiply-add per (row, token, block) lane, so that
// Q8_0 products on AVX2 are bound by the integer multiplies alone.
func dotQ32Blocks(t gguf.Type, w []byte, xq []int8, xd []float32) float32 {
	var acc float32
	var q [32]int8
	bb := t.BlockBytes()
	for b := range xd {
		d, _ := decodeQ32(t, w[bb*b:bb*(b+1)], &q)
		var p int32
		for k, v := range q {
			p += int32(v) * int32(xq[32*b+k])
		}
		acc = fma32(float32(p), d*xd[b], acc)
	}
	return acc
}

// kBlock is one 256-value K-quant super-block in the common form the K dot
// products use: value e = dw × sv[e/16] × q[e] − dmw × mv[e/16], with
// integer q, sv and mv. Q2_K, Q4_K, Q5_K and Q6_K have unsigned q and a
// min (Q6_K's offset 32 is its min: mv = 32×sv, dmw = dw); Q3_K and IQ4_XS
// have signed q and no min (signedK).
type kBlock struct {
	q       [256]int8
	sv, mv  [16]int32
	dw, dmw float32
}

// signedK reports whether t's K-quant values are signed (no min term).
func signedK(t gguf.Type) bool { return t == gguf.Q3_K || t == gguf.IQ4_XS }

// decodeK fills k from the encoded super-block blk of type t.
func decodeK(t gguf.Type, blk []byte, k *kBlock) {
	var u [256]uint8
	switch t {
	case gguf.Q4_K, gguf.Q5_K:
		unpackQ4K(&u, blk)
		if t == gguf.Q5_K {
			unpackQ5K(&u, blk)
		}
		for j := 0; j < 8; j++ {
			sc, mn := q4kScaleMin(blk[q4kOffScales:], j)
			k.sv[2*j], k.sv[2*j+1] = int32(sc), int32(sc)
			k.mv[2*j], k.mv[2*j+1] = int32(mn), int32(mn)
		}
		k.dw, k.dmw = f16At(blk, 0), f16At(blk, 2)
	case gguf.Q6_K:
		unpackQ6K(&u, blk)
		for j := 0; j < 16; j++ {
			sc := int32(int8(blk[q6kOffScales+j]))
			k.sv[j], k.mv[j] = sc, 32*sc
		}
		k.dw = f16At(blk, q6kOffD)
		k.dmw = k.dw
	case gguf.Q2_K:
		e := 0
		for n := 0; n < 2; n++ {
			q := blk[16+32*n:]
			for shift := 0; shift < 8; shift += 2 {
				for half := 0; half < 2; half++ {
					for l := 0; l < 16; l++ {
						u[e] = q[16*half+l] >> shift & 3
						e++
					}
				}
			}
		}
		for j := 0; j < 16; j++ {
			k.sv[j], k.mv[j] = int32(blk[j]&15), int32(blk[j]>>4)
		}
		k.dw, k.dmw = f16At(blk, 80), f16At(blk, 82)
	case gguf.Q3_K:
		sc := q3kScales(blk[96:108])
		hm := blk[0:32]
		m := byte(1)
		e := 0
		for n := 0; n < 2; n++ {
			q := blk[32+32*n:]
			for shift := 0; shift < 8; shift += 2 {
				for half := 0; half < 2; half++ {
					for l := 0; l < 16; l++ {
						v := int8(q[16*half+l] >> shift & 3)
						if hm[16*half+l]&m == 0 {
							v -= 4
						}
						k.q[e] = v
						e++
					}
				}
				m <<= 1
			}
		}
		for j := 0; j < 16; j++ {
			k.sv[j], k.mv[j] = int32(sc[j])-32, 0
		}
		k.dw, k.dmw = f16At(blk, 108), 0
		return
	case gguf.IQ4_XS:
		sh := binary.LittleEndian.Uint16(blk[2:])
		for ib := 0; ib < 8; ib++ {
			ls := int32(blk[4+ib/2]>>(4*(ib%2)))&15 | int32(sh>>(2*ib)&3)<<4
			k.sv[2*ib], k.sv[2*ib+1] = ls-32, ls-32
			k.mv[2*ib], k.mv[2*ib+1] = 0, 0
			qs := blk[8+16*ib:]
			for j := 0; j < 16; j++ {
				k.q[32*ib+j] = iq4nlValues[qs[j]&15]
				k.q[32*ib+16+j] = iq4nlValues[qs[j]>>4]
			}
		}
		k.dw, k.dmw = f16At(blk, 0), 0
		return
	}
	for e := range u {
		k.q[e] = int8(u[e])
	}
}

// unpackQ5K adds the fifth bits of a Q5_K block to the nibbles unpackQ4K
// wrote (Q5_K's nibbles sit 32 bytes further on, after qh).
func unpackQ5K(u *[256]uint8, blk []byte) {
	qh, ql := blk[16:48], blk[48:176]
	for c := 0; c < 4; c++ {
		for l := 0; l < 32; l++ {
			u[64*c+l] = ql[32*c+l]&15 | (qh[l]>>(2*c)&1)<<4
			u[64*c+32+l] = ql[32*c+l]>>4 | (qh[l]>>(2*c+1)&1)<<4
		}
	}
}

// dotKRef is the dot product of one K-quant row with a token's Q8_K
// blocks. Per super-block the integer sums are exact: lane l collects
// sv×(partial sum of elements 4l..4l+3) over the eight 32-element groups
// (as ggml's AVX2 sumi lanes), and the min term is one integer
// M = Σ mv[j]×bsum[j]. Then acc[l] += float(A[l])×(dw×d_x) and
// accM += float(M)×(dmw×d_x); the result is hsum(acc) − accM (hsum(acc) for
// the signed types, which have no min).
//
// Q6_K differs, as ggml_vec_dot_q6_K_q8_K (AVX2) does: its offset term
// stays in the integer lanes, A[l] −= mv[2l]×bsum[2l] + mv[2l+1]×bsum[2l+1]
// (ggml's madd of bsums with the scales, times 32), before the conversion,
// and there is no accM. Rounding the offset separately (as before) moved
// the last bits of every Q6_K product, which the int8 re-quantization of
// the next activation turns into 0.05–0.3 in log-probability on the zoo's
// random models.
func dotKRef(t gguf.Type, w []byte, xq []int8, xd []float32, bsum []int16) float32 {
	var acc [8]float32
	var accM float32
	var k kBlock
	bb := t.BlockBytes()
	for b := range xd {
		decodeK(t, w[bb*b:bb*(b+1)], &k)
		x := xq[256*b : 256*b+256]
		var A [8]int32
		for g := 0; g < 8; g++ {
			for l := 0; l < 8; l++ {
				e := 32*g + 4*l
				p := int32(k.q[e])*int32(x[e]) + int32(k.q[e+1])*int32(x[e+1]) +
					int32(k.q[e+2])*int32(x[e+2]) + int32(k.q[e+3])*int32(x[e+3])
				A[l] += k.sv[2*g+l/4] * p
			}
		}
		dd := k.dw * xd[b]
		if t == gguf.Q6_K {
			sb := bsum[16*b : 16*b+16]
			for l := 0; l < 8; l++ {
				A[l] -= k.mv[2*l]*int32(sb[2*l]) + k.mv[2*l+1]*int32(sb[2*l+1])
			}
		}
		for l := 0; l < 8; l++ {
			acc[l] = fma32(float32(A[l]), dd, acc[l])
		}
		if !signedK(t) && t != gguf.Q6_K {
			var M int32
			for j, bs := range bsum[16*b : 16*b+16] {
				M += k.mv[j] * int32(bs)
			}
			accM = fma32(float32(M), k.dmw*xd[b], accM)
		}
	}
	if signedK(t) || t == gguf.Q6_K {
		return hsum8(&acc)
	}
	return hsum8(&acc) - accM
}

// rowsRef computes out[b*m.Rows+r] for r in [r0,r1) and every token with the
// reference dot products.
func rowsRef(out []float32, m *Matrix, a *activation, r0, r1 int) {
	for r := r0; r < r1; r++ {
		w := m.row(r)
		for b := 0; b < a.batch; b++ {
			out[b*m.Rows+r] = dotRowRef(m.Type, w, a, b)
		}
	}
}

// dotRowRef is the reference dot product of encoded row w with token b.
func dotRowRef(t gguf.Type, w []byte, a *activation, b int) float32 {
	switch a.block {
	case 0:
		return dotFloatRef(t, w, a.x[b*a.cols:(b+1)*a.cols])
	case 32:
		nb := a.cols / 32
		var xs []float32
		if len(a.s) > 0 {
			xs = a.s[b*nb : (b+1)*nb]
		}
		if t == gguf.Q8_0 {
			return dotQ32Blocks(t, w, a.qs[b*a.cols:(b+1)*a.cols], a.d[b*nb:(b+1)*nb])
		}
		return dotQ32Ref(t, w, a.qs[b*a.cols:(b+1)*a.cols], a.d[b*nb:(b+1)*nb], xs)
	default:
		nb := a.cols / 256
		return dotKRef(t, w, a.qs[b*a.cols:(b+1)*a.cols], a.d[b*nb:(b+1)*nb], a.bsum[b*a.cols/16:(b+1)*a.cols/16])
	}
}
