package kernels

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

func float32frombytes(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }

// Quantize encodes src as type t, in the block layouts documented in
// blocks.go. len(src) must be a whole number of t's blocks. The encoders are
// simple round-to-nearest schemes (no error-minimising search); they exist
// for the random-weight model writer and for tests.
func Quantize(t gguf.Type, src []float32) ([]byte, error) {
	n, err := t.RowBytes(len(src))
	if err != nil {
		return nil, fmt.Errorf("kernels: quantize: %w", err)
	}
	out := make([]byte, n)
	le := binary.LittleEndian
	switch t {
	case gguf.F32:
		for i, f := range src {
			le.PutUint32(out[4*i:], math.Float32bits(f))
		}
	case gguf.F16:
		for i, f := range src {
			le.PutUint16(out[2*i:], F32ToF16(f))
		}
	case gguf.BF16:
		for i, f := range src {
			le.PutUint16(out[2*i:], F32ToBF16(f))
		}
	case gguf.Q8_0:
		for b := 0; b < len(src)/32; b++ {
			quantizeQ8_0(out[34*b:34*b+34], src[32*b:32*b+32])
		}
	case gguf.Q4_0:
		for b := 0; b < len(src)/32; b++ {
			quantizeQ4_0(out[18*b:18*b+18], src[32*b:32*b+32])
		}
	case gguf.Q4_K:
		for b := 0; b < len(src)/256; b++ {
			quantizeQ4K(out[144*b:144*b+144], src[256*b:256*b+256])
		}
	case gguf.Q6_K:
		for b := 0; b < len(src)/256; b++ {
			quantizeQ6K(out[210*b:210*b+210], src[256*b:256*b+256])
		}
	default:
		if !quantizeMore(t, out, src) {
			return nil, fmt.Errorf("%w: quantize to %s", ErrUnsupportedType, t)
		}
	}
	return out, nil
}

// roundF16 returns f as stored in, and read back from, an F16 field.
func roundF16(f float32) (float32, uint16) {
	h := F32ToF16(f)
	return F16ToF32(h), h
}

func absMax(x []float32) float32 {
	var m float32
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); a > m {
			m = a
		}
	}
	return m
}

func clampRound(v float32, lo, hi int) int {
	r := math.Round(float64(v))
	if r < float64(lo) || math.IsNaN(r) {
		return lo
	}
	if r > float64(hi) {
		return hi
	}
	return int(r)
}

func quantizeQ8_0(dst []byte, x []float32) {
	d, h := roundF16(absMax(x) / 127)
	binary.LittleEndian.PutUint16(dst, h)
	for i, v := range x {
		q := 0
		if d != 0 {
			q = clampRound(v/d, -127, 127)
		}
		dst[2+i] = byte(int8(q))
	}
}

func quantizeQ4_0(dst []byte, x []float32) {
	// The value of largest magnitude maps to nibble 0 (−8), keeping its sign
	// in d, so the full range −8..7 is used.
	var vmax float32
	for _, v := range x {
		if math.Abs(float64(v)) > math.Abs(float64(vmax)) {
			vmax = v
		}
	}
	d, h := roundF16(vmax / -8)
	binary.LittleEndian.PutUint16(dst, h)
	for j := 0; j < 16; j++ {
		lo, hi := 8, 8
		if d != 0 {
			lo = clampRound(x[j]/d, -8, 7) + 8
			hi = clampRound(x[j+16]/d, -8, 7) + 8
		}
		dst[2+j] = byte(lo) | byte(hi)<<4
	}
}

func quantizeQ4K(dst []byte, x []float32) {
	d, dmin, sc, mn := affineScales(dst[0:4], x, 32, 15, 63)
	s := dst[q4kOffScales : q4kOffScales+12]
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
				q[i] = uint8(clampRound((x[i]+dm)/ds, 0, 15))
			}
		}
	}
	qs := dst[q4kOffQs : q4kOffQs+128]
	for c := 0; c < 4; c++ {
		for l := 0; l < 32; l++ {
			qs[32*c+l] = q[64*c+l] | q[64*c+32+l]<<4
		}
	}
}

func quantizeQ6K(dst []byte, x []float32) {
	var scale [16]float32
	var maxScale float32
	for j := 0; j < 16; j++ {
		scale[j] = absMax(x[16*j:16*j+16]) / 31
		maxScale = max(maxScale, scale[j])
	}
	d, dh := roundF16(maxScale / 127)
	binary.LittleEndian.PutUint16(dst[q6kOffD:], dh)
	var q [256]uint8
	for j := 0; j < 16; j++ {
		var sc int8
		if d != 0 {
			sc = int8(min(127, math.Ceil(float64(scale[j]/d))))
		}
		dst[q6kOffScales+j] = byte(sc)
		ds := d * float32(sc)
		for e := 16 * j; e < 16*j+16; e++ {
			q[e] = 32
			if ds != 0 {
				q[e] = uint8(clampRound(x[e]/ds, -32, 31) + 32)
			}
		}
	}
	for h := 0; h < 2; h++ {
		L := dst[64*h : 64*h+64]
		H := dst[q6kOffQh+32*h : q6kOffQh+32*h+32]
		e := 128 * h
		for l := 0; l < 32; l++ {
			L[l] = q[e+l]&15 | (q[e+l+64]&15)<<4
			L[l+32] = q[e+l+32]&15 | (q[e+l+96]&15)<<4
			H[l] = q[e+l]>>4 | (q[e+l+32]>>4)<<2 | (q[e+l+64]>>4)<<4 | (q[e+l+96]>>4)<<6
		}
	}
}
