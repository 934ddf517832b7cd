//go:build amd64 && !noasm

package kernels

import (
	"encoding/binary"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

//go:noescape
func q4kRows(out *float32, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb int)

//go:noescape
func q6kRows(out *float32, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb int)

//go:noescape
func q4kRows4(out *float32, outStride int, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb, xqStride, xdStride, bsStride int)

//go:noescape
func q6kRows4(out *float32, outStride int, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb, xqStride, xdStride, bsStride int)

//go:noescape
func q4kUnpack(w *byte, nsb int, q *byte)

//go:noescape
func q6kUnpack(w *byte, nsb int, q *byte)

//go:noescape
func kDotU6(q *byte, sv *int16, mins *int16, dv *float32, xq *int8, xd *float32, bs *int16, nsb int) float32

//go:noescape
func kDotU4(q *byte, scl *int16, dv *float32, xq *int8, xd *float32, bs *int16, nsb, xqStride, xdStride, bsStride int, out *float32)

//go:noescape
func kScalesQ4K(w *byte, nsb int, scl *int16)

//go:noescape
func kDotU24(q *byte, scl *int16, dv *float32, xq *int8, xd *float32, bs *int16, nsb, xqStride, xdStride, bsStride int, out *float32)

//go:noescape
func kDotU264(q *byte, scl *int16, dv *float32, xq *int8, xd *float32, bs *int16, nsb, xqStride, xdStride, bsStride int, out *float32)

//go:noescape
func kDotU64(q *byte, scl *int16, dv *float32, xq *int8, xd *float32, bs *int16, nsb, xqStride, xdStride, bsStride int, out *float32)

//go:noescape
func kDotU(q *byte, sv *int16, mins *int16, dv *float32, xq *int8, xd *float32, bs *int16, nsb int) float32

// kScales writes 32 int16 per super-block of one encoded row: [0:16) the
// sub-block scales (Q4_K uses [0:8)), [16:32) the multipliers of the
// 16-value activation sums (Q4_K: the sub-block's min, twice; Q6_K: 32 ×
// scale). rowsK's batched path builds its unpacked row from them.
func kScales(t gguf.Type, row []byte, scl []int16) {
	if t == gguf.Q4_K {
		if nsb := len(row) / 144; nsb > 0 {
			kScalesQ4K(&row[0], nsb, &scl[0])
		}
		return
	}
	for b := 0; b < len(row)/210; b++ {
		s := row[210*b+q6kOffScales:]
		o := scl[32*b : 32*b+32]
		for j := 0; j < 16; j++ {
			v := int16(int8(s[j]))
			o[j], o[16+j] = v, 32*v
		}
	}
}

// kScalesQ4KGo is kScalesQ4K in Go, for the test that holds them equal.
func kScalesQ4KGo(row []byte, scl []int16) {
	le := binary.LittleEndian
	for b := 0; b < len(row)/144; b++ {
		s := row[144*b+q4kOffScales:]
		a, m, c := le.Uint32(s), le.Uint32(s[4:]), le.Uint32(s[8:])
		sc03, mn03 := a&0x3f3f3f3f, m&0x3f3f3f3f
		sc47 := c&0x0f0f0f0f | (a>>6&0x03030303)<<4
		mn47 := c>>4&0x0f0f0f0f | (m>>6&0x03030303)<<4
		o := scl[32*b : 32*b+32]
		for j := 0; j < 4; j++ {
			o[j] = int16(sc03 >> (8 * j) & 0xff)
			o[j+4] = int16(sc47 >> (8 * j) & 0xff)
			lo, hi := int16(mn03>>(8*j)&0xff), int16(mn47>>(8*j)&0xff)
			o[16+2*j], o[17+2*j] = lo, lo
			o[24+2*j], o[25+2*j] = hi, hi
		}
	}
}

// kScratch is rowsK's per-call unpacked row, recycled so a batched
// product allocates nothing per work item.
type kScratch struct {
	scl, sv, mins []int16
	q             []byte
	dv            []float32
	pair          kPair
}

// kPair is pairs of unpacked Q4_K/Q6_K rows interleaved per super-block,
// as kDotU24/kDotU264 read them.
type kPair struct {
	scl []int16
	q   []byte
	dv  []float32
}

var kScratchPool freeList[kScratch]

// rowsK computes Q4_K/Q6_K rows [r0,r1). A single token uses the fused
// kernels; a batch unpacks each row once (values, scale vectors, factors)
// and meets it with every four tokens through kDotU4 (the last batch%4
// through kDotU, whose scale vectors are built only then).
func rowsK(out []float32, m *Matrix, a *activation, r0, r1 int) {
	if a.batch <= kFusedMaxBatch {
		rowsKFused(out, m, a, r0, r1)
		return
	}
	nsb := a.cols / 256
	rb := m.rowBytes()
	sc := kScratchPool.get()
	defer kScratchPool.put(sc)
	sc.scl, sc.q, sc.sv = grow(sc.scl, 32*nsb), grow(sc.q, 256*nsb), grow(sc.sv, 128*nsb)
	sc.mins, sc.dv = grow(sc.mins, 16*nsb), grow(sc.dv, 2*nsb)
	scl, q, dv := sc.scl, sc.q, sc.dv
	r0 = rowsKPairs(out, m, a, r0, r1, sc) // batch > kFusedMaxBatch: tiles of four exist
	for r := r0; r < r1; r++ {             // the odd row rowsKPairs leaves
		sc.unpackRow(m.Type, m.Data[r*rb:(r+1)*rb], nsb)
		var res [4]float32
		t := 0
		for ; t+4 <= a.batch; t += 4 {
			// Called directly, not through a function value, so that res
			// stays on the stack (go:noescape holds only for direct calls).
			xq, xd, bs := &a.qs[t*a.cols], &a.d[t*nsb], &a.bsum[t*a.cols/16]
			if m.Type == gguf.Q4_K {
				kDotU4(&q[0], &scl[0], &dv[0], xq, xd, bs, nsb, a.cols, 4*nsb, 2*(a.cols/16), &res[0])
			} else {
				kDotU64(&q[0], &scl[0], &dv[0], xq, xd, bs, nsb, a.cols, 4*nsb, 2*(a.cols/16), &res[0])
			}
			for i, v := range res {
				out[(t+i)*m.Rows+r] = v
			}
		}
		kTailTokens(out, m, a, r, t, sc)
	}
}

// unpackRow fills sc.scl (kScales), sc.q (the 256 unpacked values per
// super-block) and sc.dv (d, dmin per super-block; Q6_K: d twice) from
// one encoded row.
func (sc *kScratch) unpackRow(t gguf.Type, row []byte, nsb int) {
	kScales(t, row, sc.scl)
	if t == gguf.Q4_K {
		q4kUnpack(&row[0], nsb, &sc.q[0])
	} else {
		q6kUnpack(&row[0], nsb, &sc.q[0])
	}
	for b := 0; b < nsb; b++ {
		if t == gguf.Q4_K {
			sc.dv[2*b], sc.dv[2*b+1] = f16At(row, 144*b), f16At(row, 144*b+2)
		} else {
			d := f16At(row, 210*b+q6kOffD)
			sc.dv[2*b], sc.dv[2*b+1] = d, d
		}
	}
}

// kTailTokens computes row r (unpacked in sc) for tokens [t0, batch), one
// at a time (kDotU / kDotU6).
func kTailTokens(out []float32, m *Matrix, a *activation, r, t0 int, sc *kScratch) {
	if t0 >= a.batch {
		return
	}
	nsb := a.cols / 256
	kScaleVectors(m.Type, sc.scl, sc.sv, sc.mins, nsb)
	dot := kDotU
	if m.Type == gguf.Q6_K {
		dot = kDotU6
	}
	for t := t0; t < a.batch; t++ {
		out[t*m.Rows+r] = dot(&sc.q[0], &sc.sv[0], &sc.mins[0], &sc.dv[0],
			&a.qs[t*a.cols], &a.d[t*nsb], &a.bsum[t*a.cols/16], nsb)
	}
}

// rowsKPairs computes the four-token tiles of Q4_K/Q6_K rows [r0, r1) two
// rows at a time (kDotU24/kDotU264), and the tokens past them one by one
// (kTailTokens); it returns the odd last row, left to the one-row path.
// All pairs of the range are unpacked first, then each token tile meets every pair, so the tile's
// activations stay in L1 while the unpacked rows (≈2 KiB per row of 2048
// values) stream from L2: tiles outermost re-read 8 KiB of activations
// per call from L2. The pairs go sixteen at a time, so the unpacked rows
// stay in L2 however many rows a call has (one thread has them all).
func rowsKPairs(out []float32, m *Matrix, a *activation, r0, r1 int, sc *kScratch) int {
	const block = 16 // pairs unpacked at once: ≈74 KiB at 2048 values, in L2
	for r1-r0 >= 2 {
		hi := r0 + min(2*block, (r1-r0)&^1)
		rowsKPairBlock(out, m, a, r0, hi, sc)
		r0 = hi
	}
	return r0
}

// rowsKPairBlock is rowsKPairs over an even number of rows [r0, r1).
func rowsKPairBlock(out []float32, m *Matrix, a *activation, r0, r1 int, sc *kScratch) {
	nsb := a.cols / 256
	rb := m.rowBytes()
	np := (r1 - r0) / 2
	p := &sc.pair
	p.scl, p.q, p.dv = grow(p.scl, np*64*nsb), grow(p.q, np*512*nsb), grow(p.dv, np*4*nsb)
	for i := 0; i < np; i++ {
		scl, q, dv := p.scl[i*64*nsb:], p.q[i*512*nsb:], p.dv[i*4*nsb:]
		for k := 0; k < 2; k++ {
			r := r0 + 2*i + k
			sc.unpackRow(m.Type, m.Data[r*rb:(r+1)*rb], nsb)
			for b := 0; b < nsb; b++ {
				copy(scl[64*b+32*k:64*b+32*k+32], sc.scl[32*b:32*b+32])
				copy(q[512*b+256*k:512*b+256*k+256], sc.q[256*b:256*b+256])
				dv[4*b+2*k], dv[4*b+2*k+1] = sc.dv[2*b], sc.dv[2*b+1]
			}
			kTailTokens(out, m, a, r, a.batch&^3, sc)
		}
	}
	var res [8]float32
	for t := 0; t+4 <= a.batch; t += 4 {
		xq, xd, bs := &a.qs[t*a.cols], &a.d[t*nsb], &a.bsum[t*a.cols/16]
		for i := 0; i < np; i++ {
			// Called directly, not through a function value, so that res
			// stays on the stack.
			if m.Type == gguf.Q4_K {
				kDotU24(&p.q[i*512*nsb], &p.scl[i*64*nsb], &p.dv[i*4*nsb], xq, xd, bs,
					nsb, a.cols, 4*nsb, 2*(a.cols/16), &res[0])
			} else {
				kDotU264(&p.q[i*512*nsb], &p.scl[i*64*nsb], &p.dv[i*4*nsb], xq, xd, bs,
					nsb, a.cols, 4*nsb, 2*(a.cols/16), &res[0])
			}
			r := r0 + 2*i
			for j := 0; j < 4; j++ {
				out[(t+j)*m.Rows+r] = res[j]
				out[(t+j)*m.Rows+r+1] = res[4+j]
			}
		}
	}
}

// kScaleVectors expands kScales' output into kDotU's operands: sixteen
// int16 lane scales per 32-value group (sv) and the min multipliers.
func kScaleVectors(t gguf.Type, scl, sv, mins []int16, nsb int) {
	for b := 0; b < nsb; b++ {
		s := scl[32*b : 32*b+32]
		v := sv[128*b : 128*b+128]
		for g := 0; g < 8; g++ {
			lo, hi := s[g], s[g]
			if t == gguf.Q6_K {
				lo, hi = s[2*g], s[2*g+1]
			}
			for l := 0; l < 8; l++ {
				v[16*g+l], v[16*g+8+l] = lo, hi
			}
		}
		copy(mins[16*b:16*b+16], s[16:32])
	}
}

// rowsKFused computes rows [r0,r1) for every token of a with the fused
// kernels, which unpack as they go and decode scales in registers: four
// tokens per pass (q4kRows4/q6kRows4), the last batch%4 one per pass
// (q4kRows/q6kRows). The chunk's rows (≈32 KiB) stay in cache between
// passes, so a small batch streams its weights from memory once.
func rowsKFused(out []float32, m *Matrix, a *activation, r0, r1 int) {
	nsb := a.cols / 256
	rb := m.rowBytes()
	w := &m.Data[r0*rb]
	rows4 := q4kRows4
	if m.Type == gguf.Q6_K {
		rows4 = q6kRows4
	}
	t := 0
	for ; t+4 <= a.batch; t += 4 {
		rows4(&out[t*m.Rows+r0], 4*m.Rows, w, rb, r1-r0, &a.qs[t*a.cols], &a.d[t*nsb],
			&a.bsum[t*a.cols/16], nsb, a.cols, 4*nsb, 2*(a.cols/16))
	}
	one := q4kRows
	if m.Type == gguf.Q6_K {
		one = q6kRows
	}
	for ; t < a.batch; t++ {
		xq, xd, bs := &a.qs[t*a.cols], &a.d[t*nsb], &a.bsum[t*a.cols/16]
		kRowsStreams(one, out[t*m.Rows+r0:t*m.Rows+r1], m.Data[r0*rb:r1*rb], rb, xq, xd, bs, nsb)
	}
}

// kRowKernel is the signature of the one-token K-quant row kernels.
type kRowKernel func(out *float32, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb int)

// kRowsStreams computes the rows of w (rb bytes each) into out with kern,
// in rowStreams weight streams: with two, rows i and h+i in turn (h =
// half the rows), so the hardware prefetcher follows two runs far apart.
// A row's result does not depend on the order rows are computed in.
func kRowsStreams(kern kRowKernel, out []float32, w []byte, rb int, xq *int8, xd *float32, bs *int16, nsb int) {
	n := len(out)
	if rowStreams < 2 || n < 2 {
		kern(&out[0], &w[0], rb, n, xq, xd, bs, nsb)
		return
	}
	h := n / 2
	for i := 0; i < h; i++ {
		kern(&out[i], &w[i*rb], rb, 1, xq, xd, bs, nsb)
		kern(&out[h+i], &w[(h+i)*rb], rb, 1, xq, xd, bs, nsb)
	}
	if n%2 == 1 {
		kern(&out[n-1], &w[(n-1)*rb], rb, 1, xq, xd, bs, nsb)
	}
}

// kFusedMaxBatch is the largest batch rowsK computes token by token with
// the fused kernels; larger batches unpack each row once (kDotU).
const kFusedMaxBatch = 16
