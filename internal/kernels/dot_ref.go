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

// dotQ8Ref is the dot product of one Q8_0 or Q4_0 row with a token's
// activation blocks xq (int8) and xd (scales). Per block, lane l takes the
// exact integer sum of elements 4l..4l+3, converted to float32 and
// multiplied into the lane accumulator with the scale d_w×d_x.
func dotQ8Ref(t gguf.Type, w []byte, xq []int8, xd []float32) float32 {
	var acc [8]float32
	var q [32]int8
	bb := t.BlockBytes()
	for b := range xd {
		blk := w[bb*b : bb*(b+1)]
		if t == gguf.Q8_0 {
			for i := range q {
				q[i] = int8(blk[2+i])
			}
		} else {
			for j := 0; j < 16; j++ {
				q[j] = int8(blk[2+j]&15) - 8
				q[j+16] = int8(blk[2+j]>>4) - 8
			}
		}
		s := f16At(blk, 0) * xd[b]
		x := xq[32*b : 32*b+32]
		for l := 0; l < 8; l++ {
			var p int32
			for k := 4 * l; k < 4*l+4; k++ {
				p += int32(q[k]) * int32(x[k])
			}
			acc[l] = fma32(float32(p), s, acc[l])
		}
	}
	return hsum8(&acc)
}

// dotKRef is the dot product of one Q4_K or Q6_K row with a token's
// 256-value activation blocks. Per super-block the scaled integer sums are
// exact: lane l collects sc×(partial sum of elements 4l..4l+3) over the
// eight 32-element groups, and the min (Q4_K) or offset-32 (Q6_K) term is one
// integer M. Then acc[l] += float(A[l])×(d×d_x) and accM += float(M)×(dmin×d_x)
// (d×d_x for Q6_K); the result is hsum(acc) − accM.
func dotKRef(t gguf.Type, w []byte, xq []int8, xd []float32, bsum []int16) float32 {
	var acc [8]float32
	var accM float32
	var q [256]uint8
	for b := range xd {
		x := xq[256*b : 256*b+256]
		bs := bsum[16*b : 16*b+16]
		var A [8]int32
		var M int32
		var dd, dm float32
		if t == gguf.Q4_K {
			blk := w[144*b : 144*b+144]
			unpackQ4K(&q, blk)
			for j := 0; j < 8; j++ {
				sc, mn := q4kScaleMin(blk[q4kOffScales:], j)
				for l := 0; l < 8; l++ {
					A[l] += int32(sc) * partial4(q[32*j+4*l:], x[32*j+4*l:])
				}
				M += int32(mn) * (int32(bs[2*j]) + int32(bs[2*j+1]))
			}
			dd, dm = f16At(blk, 0)*xd[b], f16At(blk, 2)*xd[b]
		} else {
			blk := w[210*b : 210*b+210]
			unpackQ6K(&q, blk)
			sc := blk[q6kOffScales : q6kOffScales+16]
			for g := 0; g < 8; g++ {
				for l := 0; l < 8; l++ {
					A[l] += int32(int8(sc[2*g+l/4])) * partial4(q[32*g+4*l:], x[32*g+4*l:])
				}
			}
			for j := 0; j < 16; j++ {
				M += 32 * int32(int8(sc[j])) * int32(bs[j])
			}
			dd = f16At(blk, q6kOffD) * xd[b]
			dm = dd
		}
		for l := 0; l < 8; l++ {
			acc[l] = fma32(float32(A[l]), dd, acc[l])
		}
		accM = fma32(float32(M), dm, accM)
	}
	return hsum8(&acc) - accM
}

func partial4(q []uint8, x []int8) int32 {
	return int32(q[0])*int32(x[0]) + int32(q[1])*int32(x[1]) + int32(q[2])*int32(x[2]) + int32(q[3])*int32(x[3])
}

// rowsRef computes out[b*m.Rows+r] for r in [r0,r1) and every token with the
// reference dot products.
func rowsRef(out []float32, m *Matrix, a *activation, r0, r1 int) {
	if dequantOnly(m.Type) {
		rowsDequant(out, m, a, r0, r1)
		return
	}
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
		return dotQ8Ref(t, w, a.qs[b*a.cols:(b+1)*a.cols], a.d[b*nb:(b+1)*nb])
	default:
		nb := a.cols / 256
		return dotKRef(t, w, a.qs[b*a.cols:(b+1)*a.cols], a.d[b*nb:(b+1)*nb], a.bsum[b*a.cols/16:(b+1)*a.cols/16])
	}
}
