//go:build amd64 && !noasm

package kernels

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

//go:noescape
func gemmK16(q *byte, sv *int16, wm *byte, xq *int8, stride int, xd16 *float32, bsT *int32, nsb int, out *float32, ostride int)

//go:noescape
func prefetchLines(p *byte, n int)

//go:noescape
func kUnpackQ4KScalesZ(w *byte, nsb int, sv *int16, wm *byte)

// kQ4KSV are kUnpackQ4KScalesZ's VPERMW indices into the decoded scale
// words (scales 0..7, then mins 0..7): four vectors of two groups' scales
// sixteen times each, then the mins twice each.
var kQ4KSV = func() (k [5][32]uint16) {
	for j := 0; j < 32; j++ {
		for v := 0; v < 4; v++ {
			k[v][j] = uint16(2*v + j/16)
		}
		if j < 16 {
			k[4][j] = uint16(8 + j/2)
		}
	}
	return k
}()

//go:noescape
func gemmK16Q6(q *byte, sv *int16, wm *byte, xq *int8, stride int, xd16 *float32, bsT *int32, nsb int, out *float32, ostride int)

// gemmPackK lays out, for each group g of sixteen tokens, the tokens'
// scales per super-block (xd16[(g·nsb+b)·16+t]) and their 16-value sums
// as int16 pairs: for Q4_K transposed, bsT[((g·nsb+b)·8+i)·16+t] holds
// bsum 2i (low half) and 2i+1 (high half) of token 16g+t's super-block b
// (one vector of the sixteen tokens per pair, for the min term M); for
// Q6_K (q6) per token, bsT[((g·nsb+b)·16+t)·8+i], so that one ymm is a
// token's eight pairs, lane l meeting the offset multipliers of lane l's
// two sub-blocks. The int8 activations themselves are read in place.
func gemmPackK(a *activation, q6 bool) {
	nsb := a.cols / 256
	g := a.batch / 16
	a.gp.groups = g
	a.gp.d16 = grow(a.gp.d16, g*16*nsb)
	a.gp.bsT = grow(a.gp.bsT, g*16*nsb*8)
	for gi := 0; gi < g; gi++ {
		for b := 0; b < nsb; b++ {
			for t := 0; t < 16; t++ {
				tok := 16*gi + t
				a.gp.d16[(gi*nsb+b)*16+t] = a.d[tok*nsb+b]
				bs := a.bsum[tok*a.cols/16+16*b:]
				for i := 0; i < 8; i++ {
					v := int32(uint32(uint16(bs[2*i])) | uint32(uint16(bs[2*i+1]))<<16)
					if q6 {
						a.gp.bsT[((gi*nsb+b)*16+t)*8+i] = v
					} else {
						a.gp.bsT[((gi*nsb+b)*8+i)*16+t] = v
					}
				}
			}
		}
	}
}

// kRowScratch is one row unpacked for gemmK16/gemmK16Q6: per super-block
// its 256 values (q), 128 int16 scales, eight per sub-block half-group
// (sv), and its 16 min multipliers (Q6_K: the negated offset multipliers
// −32·sc, so the kernel adds them into the integer lanes) and two float
// factors (wm, 40 bytes).
type kRowScratch struct {
	q, wm []byte
	sv    []uint64 // int16 ×4 per word
	scl   []int16
}

// kRowsAtOnce is how many unpacked rows meet each token group in turn
// (the group's activations stay in cache between them).
const kRowsAtOnce = 4

var kRowPool freeList[kRowScratch]

// unpack fills s from encoded row of type t (Q4_K or Q6_K).
func (s *kRowScratch) unpack(t gguf.Type, row []byte, nsb int) {
	if t == gguf.Q4_K {
		s.unpackQ4K(row, nsb)
		return
	}
	le := binary.LittleEndian
	kScales(t, row, s.scl)
	q6kUnpack(&row[0], nsb, &s.q[0])
	const rep = 0x0001000100010001
	for b := 0; b < nsb; b++ {
		wm := s.wm[40*b : 40*b+40]
		sc := s.scl[32*b : 32*b+32]
		sv := s.sv[32*b : 32*b+32]
		for g := 0; g < 8; g++ {
			lo, hi := uint64(uint16(sc[2*g]))*rep, uint64(uint16(sc[2*g+1]))*rep
			sv[4*g], sv[4*g+1], sv[4*g+2], sv[4*g+3] = lo, lo, hi, hi
		}
		for j := 0; j < 16; j++ {
			le.PutUint16(wm[2*j:], uint16(-sc[16+j])) // |32·sc| ≤ 4096 fits int16
		}
		d := f16At(row, 210*b+q6kOffD)
		le.PutUint32(wm[32:], math.Float32bits(d))
		le.PutUint32(wm[36:], math.Float32bits(d))
	}
}

// unpackQ4K is unpack for Q4_K, decoding the packed 6-bit scales and mins
// straight into the scale words (kScales' decoding, without its
// intermediate array): byte g of sc is group g's scale, byte j of mn
// sub-block pair j's min.
func (s *kRowScratch) unpackQ4K(row []byte, nsb int) {
	le := binary.LittleEndian
	q4kUnpack(&row[0], nsb, &s.q[0])
	if q4kScalesAsm {
		kUnpackQ4KScalesZ(&row[0], nsb, (*int16)(unsafe.Pointer(&s.sv[0])), &s.wm[0])
		for b := 0; b < nsb; b++ {
			blk, wm := row[144*b:], s.wm[40*b:40*b+40]
			le.PutUint32(wm[32:], math.Float32bits(f16At(blk, 0)))
			le.PutUint32(wm[36:], math.Float32bits(f16At(blk, 2)))
		}
		return
	}
	const rep = 0x0001000100010001
	for b := 0; b < nsb; b++ {
		blk := row[144*b : 144*b+144]
		sp := blk[q4kOffScales:]
		a, m, c := le.Uint32(sp), le.Uint32(sp[4:]), le.Uint32(sp[8:])
		sc := uint64(a&0x3f3f3f3f) | uint64(c&0x0f0f0f0f|(a>>6&0x03030303)<<4)<<32
		mn := uint64(m&0x3f3f3f3f) | uint64(c>>4&0x0f0f0f0f|(m>>6&0x03030303)<<4)<<32
		sv := s.sv[32*b : 32*b+32]
		for g := 0; g < 8; g++ {
			v := (sc >> (8 * g) & 0xff) * rep
			sv[4*g], sv[4*g+1], sv[4*g+2], sv[4*g+3] = v, v, v, v
		}
		wm := s.wm[40*b : 40*b+40]
		for j := 0; j < 4; j++ {
			m0, m1 := mn>>(16*j)&0xff, mn>>(16*j+8)&0xff
			le.PutUint64(wm[8*j:], m0*0x00010001|m1*0x00010001<<32)
		}
		le.PutUint32(wm[32:], math.Float32bits(f16At(blk, 0)))
		le.PutUint32(wm[36:], math.Float32bits(f16At(blk, 2)))
	}
}

// rowsGemmK unpacks each row once and meets it with every full group of
// sixteen tokens (gemmK16, or gemmK16Q6 for Q6_K's folded offset), rows
// kRowsAtOnce at a time so that a group's activations are read from L2
// once per kRowsAtOnce rows (BenchmarkGemm, one thread: Q4_K 134 → 147,
// Q6_K 132 → 153 GFLOP/cpu-s from one row at a time); the base kernel
// takes the tokens past them.
func rowsGemmK(out []float32, m *Matrix, a *activation, r0, r1 int) {
	nsb, rb := a.cols/256, m.rowBytes()
	tile := gemmK16
	if m.Type == gguf.Q6_K {
		tile = gemmK16Q6
	}
	var ss [kRowsAtOnce]*kRowScratch
	for i := range ss {
		s := kRowPool.get()
		s.q, s.sv, s.wm, s.scl = grow(s.q, 256*nsb), grow(s.sv, 32*nsb), grow(s.wm, 40*nsb), grow(s.scl, 32*nsb)
		ss[i] = s
	}
	for r := r0; r < r1; r += kRowsAtOnce {
		n := min(kRowsAtOnce, r1-r)
		for i := 0; i < n; i++ {
			ss[i].unpack(m.Type, m.Data[(r+i)*rb:(r+i+1)*rb], nsb)
		}
		if next := min(m.Rows, r+2*n) - (r + n); next > 0 { // the next rows arrive while these rows' tiles run
			prefetchLines(&m.Data[(r+n)*rb], next*rb)
		}
		for gi := 0; gi < a.gp.groups; gi++ {
			for i := 0; i < n; i++ {
				s := ss[i]
				tile(&s.q[0], (*int16)(unsafe.Pointer(&s.sv[0])), &s.wm[0], &a.qs[16*gi*a.cols], a.cols,
					&a.gp.d16[gi*nsb*16], &a.gp.bsT[gi*nsb*128], nsb, &out[16*gi*m.Rows+r+i], 4*m.Rows)
			}
		}
	}
	for _, s := range ss {
		kRowPool.put(s)
	}
	gemmFinish(out, m, a, 16, r0, r1, r1)
}

// q4kScalesAsm makes unpackQ4K decode the scales with kUnpackQ4KScalesZ
// (the tiles only run with AVX-512); a variable so a test can compare it
// with the Go decoding.
var q4kScalesAsm = true
