package kernels

import (
	"encoding/binary"
	"math"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// Encoders for the types dequant.go decodes: round-to-nearest, like the
// others in quantize.go (no importance search, so a file written with them
// is less accurate than llama.cpp's quantizer would make it, but laid out
// exactly as ggml reads it). They exist so mkmodel can write every type for
// benchmarks and tests.

// quantizeMore encodes src as t into out, or reports false for a type it
// does not know.
func quantizeMore(t gguf.Type, out []byte, src []float32) bool {
	enc := map[gguf.Type]func([]byte, []float32){
		gguf.Q4_1: quantizeQ4_1, gguf.Q5_0: quantizeQ5_0, gguf.Q5_1: quantizeQ5_1,
		gguf.IQ4_NL: quantizeIQ4NL, gguf.IQ4_XS: quantizeIQ4XS,
		gguf.Q2_K: quantizeQ2K, gguf.Q3_K: quantizeQ3K, gguf.Q5_K: quantizeQ5K,
	}[t]
	if enc == nil {
		return false
	}
	bb, be := t.BlockBytes(), t.BlockElems()
	for b := 0; b < len(src)/be; b++ {
		enc(out[bb*b:bb*(b+1)], src[be*b:be*(b+1)])
	}
	return true
}

// signedMax is the value of largest magnitude, sign kept.
func signedMax(x []float32) float32 {
	var m float32
	for _, v := range x {
		if math.Abs(float64(v)) > math.Abs(float64(m)) {
			m = v
		}
	}
	return m
}

func minMax(x []float32) (lo, hi float32) {
	lo, hi = x[0], x[0]
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

// affine32 quantizes 32 values as q×d + m with q in [0, levels].
func affine32(dst []byte, x []float32, levels int) (q [32]int) {
	lo, hi := minMax(x)
	d, dh := roundF16((hi - lo) / float32(levels))
	m, mh := roundF16(lo)
	binary.LittleEndian.PutUint16(dst[0:], dh)
	binary.LittleEndian.PutUint16(dst[2:], mh)
	for i, v := range x {
		if d != 0 {
			q[i] = clampRound((v-m)/d, 0, levels)
		}
	}
	return q
}

func quantizeQ4_1(dst []byte, x []float32) {
	q := affine32(dst, x, 15)
	for j := 0; j < 16; j++ {
		dst[4+j] = byte(q[j]) | byte(q[j+16])<<4
	}
}

// put5 stores 32 five-bit values: low nibbles in qs (element j low, j+16
// high), fifth bits in qh bit j.
func put5(qh, qs []byte, q [32]int) {
	var h uint32
	for j := 0; j < 16; j++ {
		qs[j] = byte(q[j]&15) | byte(q[j+16]&15)<<4
	}
	for j := 0; j < 32; j++ {
		h |= uint32(q[j]>>4&1) << j
	}
	binary.LittleEndian.PutUint32(qh, h)
}

func quantizeQ5_0(dst []byte, x []float32) {
	d, h := roundF16(signedMax(x) / -16)
	binary.LittleEndian.PutUint16(dst, h)
	var q [32]int
	for i, v := range x {
		q[i] = 16
		if d != 0 {
			q[i] = clampRound(v/d, -16, 15) + 16
		}
	}
	put5(dst[2:6], dst[6:22], q)
}

func quantizeQ5_1(dst []byte, x []float32) {
	q := affine32(dst, x, 31)
	put5(dst[4:8], dst[8:24], q)
}

// nearestIQ4 is the index of the codebook value nearest to v.
func nearestIQ4(v float32) byte {
	best, bestErr := 0, float32(math.Inf(1))
	for i, c := range iq4nlValues {
		if e := float32(math.Abs(float64(v - float32(c)))); e < bestErr {
			best, bestErr = i, e
		}
	}
	return byte(best)
}

// putIQ4 stores 32 codebook indices of x/d: element j low, j+16 high.
func putIQ4(qs []byte, x []float32, d float32) {
	for j := 0; j < 16; j++ {
		lo, hi := byte(8), byte(8)
		if d != 0 {
			lo, hi = nearestIQ4(x[j]/d), nearestIQ4(x[j+16]/d)
		}
		qs[j] = lo | hi<<4
	}
}

func quantizeIQ4NL(dst []byte, x []float32) {
	d, h := roundF16(signedMax(x) / float32(iq4nlValues[0]))
	binary.LittleEndian.PutUint16(dst, h)
	putIQ4(dst[2:18], x, d)
}

func quantizeIQ4XS(dst []byte, x []float32) {
	var s [8]float32 // each sub-block's own scale, sign kept
	var smax float32
	for ib := range s {
		s[ib] = signedMax(x[32*ib:32*ib+32]) / float32(iq4nlValues[0])
		smax = max(smax, float32(math.Abs(float64(s[ib]))))
	}
	d, h := roundF16(smax / 31)
	le := binary.LittleEndian
	le.PutUint16(dst, h)
	var sh uint16
	clear(dst[4:8])
	for ib := range s {
		ls := 32
		if d != 0 {
			ls = clampRound(s[ib]/d, -32, 31) + 32
		}
		dst[4+ib/2] |= byte(ls&15) << (4 * (ib % 2))
		sh |= uint16(ls>>4) << (2 * ib)
		putIQ4(dst[8+16*ib:24+16*ib], x[32*ib:32*ib+32], d*float32(ls-32))
	}
	le.PutUint16(dst[2:], sh)
}

// quantizeQ5K is quantizeQ4K with 32 levels and the fifth bits in qh.
func quantizeQ5K(dst []byte, x []float32) {
	d, dmin, sc, mn := affineScales(dst[0:4], x, 32, 31, 63)
	s := dst[4:16]
	for j := 0; j < 4; j++ {
		s[j] = sc[j] | (sc[j+4]>>4)<<6
		s[j+4] = mn[j] | (mn[j+4]>>4)<<6
		s[j+8] = sc[j+4]&15 | (mn[j+4]&15)<<4
	}
	var q [256]uint8
	for j := 0; j < 8; j++ {
		ds, dm := d*float32(sc[j]), dmin*float32(mn[j])
		for i := 32 * j; i < 32*j+32; i++ {
			if ds != 0 {
				q[i] = uint8(clampRound((x[i]+dm)/ds, 0, 31))
			}
		}
	}
	qh, qs := dst[16:48], dst[48:176]
	clear(qh)
	for c := 0; c < 4; c++ {
		for l := 0; l < 32; l++ {
			q0, q1 := q[64*c+l], q[64*c+32+l]
			qs[32*c+l] = q0&15 | (q1&15)<<4
			qh[l] |= (q0>>4)<<(2*c) | (q1>>4)<<(2*c+1)
		}
	}
}

// affineScales quantizes the scales and mins of the value = d·sc·q − dmin·m
// K-quants: x in sub-blocks of sub values, each spanning its range (0
// included) with levels+1 steps; d and dmin are stored as F16 into
// dst[0:4], and each sub-block's sc and m are rounded up (so the grid still
// covers the range) to at most maxScale.
func affineScales(dst []byte, x []float32, sub, levels, maxScale int) (d, dmin float32, sc, mn [16]uint8) {
	var scale, mins [16]float32
	var hiScale, hiMin float32
	for j := 0; j < len(x)/sub; j++ {
		lo, hi := minMax(x[sub*j : sub*j+sub])
		lo, hi = min(lo, 0), max(hi, 0)
		scale[j], mins[j] = (hi-lo)/float32(levels), -lo
		hiScale, hiMin = max(hiScale, scale[j]), max(hiMin, mins[j])
	}
	d, dh := roundF16(hiScale / float32(maxScale))
	dmin, mh := roundF16(hiMin / float32(maxScale))
	binary.LittleEndian.PutUint16(dst[0:], dh)
	binary.LittleEndian.PutUint16(dst[2:], mh)
	for j := 0; j < len(x)/sub; j++ {
		if d != 0 {
			sc[j] = uint8(min(float64(maxScale), math.Ceil(float64(scale[j]/d))))
		}
		if dmin != 0 {
			mn[j] = uint8(min(float64(maxScale), math.Ceil(float64(mins[j]/dmin))))
		}
	}
	return d, dmin, sc, mn
}

// kQuantOrder maps Q2_K/Q3_K's sixteen 16-value sub-blocks to their bytes:
// element e = 128n + 32k + 16h + l sits in byte 32n + 16h + l of the
// two-bit array, at bit 2k.
func kQuantByte(e int) (byteIdx, shift int) {
	n, k, h, l := e/128, e%128/32, e%32/16, e%16
	return 32*n + 16*h + l, 2 * k
}

func quantizeQ2K(dst []byte, x []float32) {
	d, dmin, scs, mns := affineScales(dst[80:84], x, 16, 3, 15)
	qs := dst[16:80]
	clear(qs)
	for j := 0; j < 16; j++ {
		sc, mn := scs[j], mns[j]
		dst[j] = sc | mn<<4
		ds, dm := d*float32(sc), dmin*float32(mn)
		for e := 16 * j; e < 16*j+16; e++ {
			q := 0
			if ds != 0 {
				q = clampRound((x[e]+dm)/ds, 0, 3)
			}
			bi, sh := kQuantByte(e)
			qs[bi] |= byte(q) << sh
		}
	}
}

func quantizeQ3K(dst []byte, x []float32) {
	var s [16]float32
	var smax float32
	for j := range s {
		s[j] = signedMax(x[16*j:16*j+16]) / -4
		smax = max(smax, float32(math.Abs(float64(s[j]))))
	}
	d, dh := roundF16(smax / 31)
	binary.LittleEndian.PutUint16(dst[108:], dh)
	hm, qs, sc := dst[0:32], dst[32:96], dst[96:108]
	clear(dst[0:108])
	for j := range s {
		ls := 32
		if d != 0 {
			ls = clampRound(s[j]/d, -32, 31) + 32
		}
		sc[j%8] |= byte(ls&15) << (4 * (j / 8))
		sc[8+j%4] |= byte(ls>>4) << (2 * (j / 4))
		dl := d * float32(ls-32)
		for e := 16 * j; e < 16*j+16; e++ {
			q := 4 // v = q − 4 in [−4, 3]
			if dl != 0 {
				q = clampRound(x[e]/dl, -4, 3) + 4
			}
			bi, sh := kQuantByte(e)
			qs[bi] |= byte(q&3) << sh
			// The high bit of element e: hmask byte 16h + l, bit 4n + k.
			n, k := e/128, e%128/32
			hm[bi%32] |= byte(q>>2) << (4*n + k)
		}
	}
}
