//go:build amd64 && !noasm

package kernels

import (
	"sync"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

//go:noescape
func kDotS(q *byte, sv *int16, dv *float32, xq *int8, xd *float32, nsb int) float32

// The types added after the first seven reach the assembly through an
// unpacked form of each row, built in Go: 32-value blocks become Q8_0
// blocks (their integer values all fit int8 and their scale is the same
// F16), so the Q8_0 kernels compute dotQ32Ref's lanes exactly; the min
// term of Q4_1/Q5_1 is then added as in dotQ32Ref. K-quant rows become
// kDotU's (unsigned, Q2_K/Q5_K) or kDotS's (signed, Q3_K/IQ4_XS) operands.

// xScratch is the unpacked rows of one work item, recycled.
type xScratch struct {
	q8   []byte    // 32-blocks: rows as Q8_0
	mins []float32 // Q4_1/Q5_1: the F16 min of each block
	k    kBlock
	q    []byte
	sv   []int16
	mv   []int16
	dv   []float32
}

var xScratchPool = sync.Pool{New: func() any { return new(xScratch) }}

// rowsQ32 computes rows [r0,r1) of a Q4_1, Q5_0, Q5_1 or IQ4_NL matrix.
func rowsQ32(out []float32, m *Matrix, a *activation, r0, r1 int) {
	nb := a.cols / 32
	sc := xScratchPool.Get().(*xScratch)
	defer xScratchPool.Put(sc)
	rows := r1 - r0
	sc.q8 = grow(sc.q8, rows*nb*34)
	minTerm := usesQ8_1(m.Type)
	if minTerm {
		sc.mins = grow(sc.mins, rows*nb)
	}
	var q [32]int8
	bb := m.Type.BlockBytes()
	for r := r0; r < r1; r++ {
		w := m.row(r)
		for b := 0; b < nb; b++ {
			blk := w[bb*b : bb*(b+1)]
			_, mn := decodeQ32(m.Type, blk, &q)
			o := sc.q8[((r-r0)*nb+b)*34:]
			o[0], o[1] = blk[0], blk[1] // the same F16 scale
			for i, v := range q {
				o[2+i] = byte(v)
			}
			if minTerm {
				sc.mins[(r-r0)*nb+b] = mn
			}
		}
	}
	rowsQ8On(out, m.Rows, gguf.Q8_0, sc.q8, nb*34, a, r0, r1)
	if !minTerm {
		return
	}
	for t := 0; t < a.batch; t++ {
		xs := a.s[t*nb : (t+1)*nb]
		for r := r0; r < r1; r++ {
			var summs float32
			for b, mn := range sc.mins[(r-r0)*nb : (r-r0+1)*nb] {
				summs = fma32(mn, xs[b], summs)
			}
			out[t*m.Rows+r] += summs
		}
	}
}

// rowsKx computes rows [r0,r1) of a Q2_K, Q3_K, Q5_K or IQ4_XS matrix:
// each row is decoded once (decodeK) and met with every token.
func rowsKx(out []float32, m *Matrix, a *activation, r0, r1 int) {
	nsb := a.cols / 256
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
