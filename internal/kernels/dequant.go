package kernels

import (
	"encoding/binary"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// The block layouts and dequantization (ggml's arithmetic, used for
// embedding rows and as the exact value in tests) of the weight types added
// after the first seven. Their dot products are integer, like ggml's
// (dotQ32Ref, dotKRef in dot_ref.go, on activations quantized as in
// activation.go).

// blockQ4_1 holds 32 weights: value = d×nibble + m; byte j carries element
// j (low nibble) and j+16 (high nibble).
type blockQ4_1 struct {
	d, m uint16 // F16 scale and min
	qs   [16]byte
}

// blockQ5_0 holds 32 weights: value = d×(q − 16), q = nibble | bit<<4 with
// bit j of qh (little-endian uint32) the fifth bit of element j.
type blockQ5_0 struct {
	d  uint16
	qh [4]byte
	qs [16]byte
}

// blockQ5_1 is blockQ5_0 with a min: value = d×q + m.
type blockQ5_1 struct {
	d, m uint16
	qh   [4]byte
	qs   [16]byte
}

// blockIQ4_NL holds 32 weights: value = d×iq4nlValues[nibble].
type blockIQ4_NL struct {
	d  uint16
	qs [16]byte
}

// blockQ5_K is blockQ4_K plus a fifth bit per weight: bit 2c (low nibbles)
// and 2c+1 (high nibbles) of qh[l] belong to chunk c's element l.
type blockQ5_K struct {
	d, dmin uint16
	scales  [12]byte
	qh      [32]byte
	qs      [128]byte
}

// blockQ2_K: sixteen 16-weight sub-blocks, scales[i] low nibble the scale,
// high nibble the min: value = d×sc×q − dmin×m, q 2 bits.
type blockQ2_K struct {
	scales  [16]byte
	qs      [64]byte
	d, dmin uint16
}

// blockQ3_K: sixteen 16-weight sub-blocks with 6-bit scales (offset 32)
// packed in 12 bytes; q = 2 low bits − (high bit clear ? 4 : 0).
type blockQ3_K struct {
	hmask  [32]byte
	qs     [64]byte
	scales [12]byte
	d      uint16
}

// blockIQ4_XS: eight 32-weight sub-blocks with 6-bit scales (offset 32),
// values from iq4nlValues.
type blockIQ4_XS struct {
	d       uint16
	scalesH uint16
	scalesL [4]byte
	qs      [128]byte
}

var (
	_ = blockQ4_1{}
	_ = blockQ5_0{}
	_ = blockQ5_1{}
	_ = blockIQ4_NL{}
	_ = blockQ5_K{}
	_ = blockQ2_K{}
	_ = blockQ3_K{}
	_ = blockIQ4_XS{}
)

// iq4nlValues is the fixed non-linear 4-bit codebook of IQ4_NL and IQ4_XS.
var iq4nlValues = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// dequantOnly reports whether t is decoded by dequantizeExtra.
func dequantOnly(t gguf.Type) bool {
	switch t {
	case gguf.Q4_1, gguf.Q5_0, gguf.Q5_1, gguf.IQ4_NL, gguf.Q5_K, gguf.Q2_K, gguf.Q3_K, gguf.IQ4_XS:
		return true
	}
	return false
}

// mulSub is a×b − c rounded after the product, as C computes it without
// contraction (the explicit float32 conversion forbids fusing).
func mulSub(a, b, c float32) float32 { return float32(a*b) - c }

// mulAdd is a×b + c rounded after the product.
func mulAdd(a, b, c float32) float32 { return float32(a*b) + c }

// dequantizeExtra decodes the types of this file, block by block, with
// ggml's arithmetic (dequantize_row_* in ggml-quants.c).
func dequantizeExtra(t gguf.Type, dst []float32, src []byte) {
	bb := t.BlockBytes()
	be := t.BlockElems()
	for b := 0; b < len(dst)/be; b++ {
		blk := src[bb*b : bb*(b+1)]
		y := dst[be*b : be*(b+1)]
		switch t {
		case gguf.Q4_1:
			d, m := f16At(blk, 0), f16At(blk, 2)
			for j := 0; j < 16; j++ {
				q := blk[4+j]
				y[j] = mulAdd(float32(q&15), d, m)
				y[j+16] = mulAdd(float32(q>>4), d, m)
			}
		case gguf.Q5_0, gguf.Q5_1:
			d := f16At(blk, 0)
			off, m := 2, float32(0)
			if t == gguf.Q5_1 {
				off, m = 4, f16At(blk, 2)
			}
			qh := binary.LittleEndian.Uint32(blk[off:])
			qs := blk[off+4:]
			for j := 0; j < 16; j++ {
				h0 := byte((qh>>j)<<4) & 0x10
				h1 := byte(qh>>(j+12)) & 0x10
				x0, x1 := int(qs[j]&15|h0), int(qs[j]>>4|h1)
				if t == gguf.Q5_0 {
					y[j] = float32(x0-16) * d
					y[j+16] = float32(x1-16) * d
				} else {
					y[j] = mulAdd(float32(x0), d, m)
					y[j+16] = mulAdd(float32(x1), d, m)
				}
			}
		case gguf.IQ4_NL:
			d := f16At(blk, 0)
			for j := 0; j < 16; j++ {
				y[j] = d * float32(iq4nlValues[blk[2+j]&15])
				y[j+16] = d * float32(iq4nlValues[blk[2+j]>>4])
			}
		case gguf.IQ4_XS:
			d := f16At(blk, 0)
			sh := binary.LittleEndian.Uint16(blk[2:])
			for ib := 0; ib < 8; ib++ {
				ls := int(blk[4+ib/2]>>(4*(ib%2)))&15 | int(sh>>(2*ib)&3)<<4
				dl := d * float32(ls-32)
				qs := blk[8+16*ib:]
				for j := 0; j < 16; j++ {
					y[32*ib+j] = dl * float32(iq4nlValues[qs[j]&15])
					y[32*ib+j+16] = dl * float32(iq4nlValues[qs[j]>>4])
				}
			}
		case gguf.Q5_K:
			d, dmin := f16At(blk, 0), f16At(blk, 2)
			qh, ql := blk[16:48], blk[48:176]
			for c := 0; c < 4; c++ {
				sc1, m1 := q4kScaleMin(blk[4:], 2*c)
				sc2, m2 := q4kScaleMin(blk[4:], 2*c+1)
				d1, dm1 := d*float32(sc1), dmin*float32(m1)
				d2, dm2 := d*float32(sc2), dmin*float32(m2)
				u1, u2 := byte(1)<<(2*c), byte(2)<<(2*c)
				for l := 0; l < 32; l++ {
					q0, q1 := float32(ql[32*c+l]&15), float32(ql[32*c+l]>>4)
					if qh[l]&u1 != 0 {
						q0 += 16
					}
					if qh[l]&u2 != 0 {
						q1 += 16
					}
					y[64*c+l] = mulSub(d1, q0, dm1)
					y[64*c+32+l] = mulSub(d2, q1, dm2)
				}
			}
		case gguf.Q2_K:
			d, dmin := f16At(blk, 80), f16At(blk, 82)
			is, e := 0, 0
			for n := 0; n < 2; n++ {
				q := blk[16+32*n:]
				for shift := 0; shift < 8; shift += 2 {
					for half := 0; half < 2; half++ {
						sc := blk[is]
						is++
						dl, ml := d*float32(sc&15), dmin*float32(sc>>4)
						for l := 0; l < 16; l++ {
							y[e] = mulSub(dl, float32(q[16*half+l]>>shift&3), ml)
							e++
						}
					}
				}
			}
		case gguf.Q3_K:
			d := f16At(blk, 108)
			sc := q3kScales(blk[96:108])
			hm := blk[0:32]
			m := byte(1)
			is, e := 0, 0
			for n := 0; n < 2; n++ {
				q := blk[32+32*n:]
				for shift := 0; shift < 8; shift += 2 {
					for half := 0; half < 2; half++ {
						dl := d * float32(int(sc[is])-32)
						is++
						for l := 0; l < 16; l++ {
							v := int(q[16*half+l] >> shift & 3)
							if hm[16*half+l]&m == 0 {
								v -= 4
							}
							y[e] = dl * float32(v)
							e++
						}
					}
					m <<= 1
				}
			}
		}
	}
}

// q3kScales unpacks Q3_K's twelve scale bytes into sixteen 6-bit values:
// low four bits from bytes 0–7 (low nibbles for scales 0–7, high nibbles for
// 8–15), the top two bits from bytes 8–11.
func q3kScales(s []byte) [16]uint8 {
	var out [16]uint8
	for i := 0; i < 16; i++ {
		lo := s[i%8] >> (4 * (i / 8)) & 15
		hi := s[8+i%4] >> (2 * (i / 4)) & 3
		out[i] = lo | hi<<4
	}
	return out
}
