package kernels

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// These tests build blocks by hand from the layouts of ggml-common.h and
// state each element's expected value by its index, independently of the
// loops in dequant.go.

func putF16(b []byte, off int, v float32) { binary.LittleEndian.PutUint16(b[off:], F32ToF16(v)) }

func checkDequant(t *testing.T, typ gguf.Type, blk []byte, want func(e int) float32) {
	t.Helper()
	if len(blk) != typ.BlockBytes() {
		t.Fatalf("%s: block of %d bytes, want %d", typ, len(blk), typ.BlockBytes())
	}
	n := typ.BlockElems()
	m, err := NewMatrix(typ, 1, n, blk)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float32, n)
	m.DequantizeRow(got, 0)
	for e := 0; e < n; e++ {
		if got[e] != want(e) {
			t.Fatalf("%s element %d = %v, want %v", typ, e, got[e], want(e))
		}
	}
	// x = ±127 and 0 quantizes exactly (scale 1 for Q8_0/Q8_1; −1 or 1
	// for Q8_K), so the integer matmul must give the exact dot of the
	// dequantized row, up to float rounding.
	x := make([]float32, n)
	var exact float64
	for i := range x {
		x[i] = float32(127 * (i%3 - 1))
		exact += float64(got[i]) * float64(x[i])
	}
	var out, ref [1]float32
	NewPool(1).MatMul(out[:], m, x, 1)
	MatMulRef(ref[:], m, x, 1)
	if !sameBits(out[0], ref[0]) || math.Abs(float64(out[0])-exact) > 1e-5*math.Abs(exact)+1e-4 {
		t.Fatalf("%s matmul %v, reference %v, exact dot of dequantized row %v", typ, out[0], ref[0], exact)
	}
}

func nib(j int) byte { return byte(j&15 | (15-j&15)<<4) }

func TestDequantSmallBlocks(t *testing.T) {
	lowHigh := func(e int) int { // the nibble of element e with qs[j] = nib(j)
		if e < 16 {
			return e
		}
		return 15 - (e - 16)
	}
	b := make([]byte, 20)
	putF16(b, 0, 0.5)
	putF16(b, 2, -1)
	for j := 0; j < 16; j++ {
		b[4+j] = nib(j)
	}
	checkDequant(t, gguf.Q4_1, b, func(e int) float32 { return 0.5*float32(lowHigh(e)) - 1 })

	b = make([]byte, 22)
	putF16(b, 0, 2)
	binary.LittleEndian.PutUint32(b[2:], 0xAAAAAAAA) // fifth bit set on odd elements
	for j := 0; j < 16; j++ {
		b[6+j] = nib(j)
	}
	checkDequant(t, gguf.Q5_0, b, func(e int) float32 { return 2 * float32(lowHigh(e)|(e&1)<<4-16) })

	b = make([]byte, 24)
	putF16(b, 0, 2)
	putF16(b, 2, 0.25)
	binary.LittleEndian.PutUint32(b[4:], 0xAAAAAAAA)
	for j := 0; j < 16; j++ {
		b[8+j] = nib(j)
	}
	checkDequant(t, gguf.Q5_1, b, func(e int) float32 { return 2*float32(lowHigh(e)|(e&1)<<4) + 0.25 })

	b = make([]byte, 18)
	putF16(b, 0, 1)
	for j := 0; j < 16; j++ {
		b[2+j] = nib(j)
	}
	kv := []float32{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}
	checkDequant(t, gguf.IQ4_NL, b, func(e int) float32 { return kv[lowHigh(e)] })
}

func TestDequantSuperBlocks(t *testing.T) {
	kv := []float32{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

	// Q5_K: sub-block s has scale s+1 and min s (below 16: no high bits).
	b := make([]byte, 176)
	putF16(b, 0, 1)
	putF16(b, 2, 0.5)
	for s := 0; s < 8; s++ {
		if s < 4 {
			b[4+s], b[4+s+4] = byte(s+1), byte(s)
		} else {
			b[4+s+4] = byte(s+1) | byte(s)<<4
		}
	}
	for l := 0; l < 32; l++ {
		b[16+l] = byte(l * 37)
		for c := 0; c < 4; c++ {
			b[48+32*c+l] = byte((l+c)&15 | ((3*l+c)&15)<<4)
		}
	}
	checkDequant(t, gguf.Q5_K, b, func(e int) float32 {
		c, hi, l := e/64, e%64/32, e%32
		s := 2*c + hi
		q := (l + c) & 15
		if hi == 1 {
			q = (3*l + c) & 15
		}
		q += 16 * int(b[16+l]>>(2*c+hi)&1)
		return float32(s+1)*float32(q) - 0.5*float32(s)
	})

	// Q2_K: scale byte i has scale i%16 and min (15-i)%16.
	b = make([]byte, 84)
	for i := 0; i < 16; i++ {
		b[i] = byte(i%16) | byte((15-i)%16)<<4
	}
	for i := 0; i < 64; i++ {
		b[16+i] = byte(i*29 + 7)
	}
	putF16(b, 80, 1)
	putF16(b, 82, 0.25)
	checkDequant(t, gguf.Q2_K, b, func(e int) float32 {
		n, k := e/128, e%128
		j, part, l := k/32, k%32/16, k%16
		sc := b[8*n+2*j+part]
		q := b[16+32*n+16*part+l] >> (2 * j) & 3
		return float32(sc&15)*float32(q) - 0.25*float32(sc>>4)
	})

	// Q3_K: sub-block i has 6-bit scale 4i+1 (value 4i+1−32).
	b = make([]byte, 110)
	for i := 0; i < 16; i++ {
		s := byte(4*i + 1)
		b[96+i%8] |= (s & 15) << (4 * (i / 8))
		b[96+8+i%4] |= (s >> 4) << (2 * (i / 4))
	}
	for i := 0; i < 32; i++ {
		b[i] = byte(i * 53)
	}
	for i := 0; i < 64; i++ {
		b[32+i] = byte(i*29 + 7)
	}
	putF16(b, 108, 1)
	checkDequant(t, gguf.Q3_K, b, func(e int) float32 {
		n, k := e/128, e%128
		j, part, l := k/32, k%32/16, k%16
		is := 8*n + 2*j + part
		v := int(b[32+32*n+16*part+l] >> (2 * j) & 3)
		if b[16*part+l]>>(4*n+j)&1 == 0 {
			v -= 4
		}
		return float32(4*is+1-32) * float32(v)
	})

	// IQ4_XS: sub-block ib has 6-bit scale 7ib+3.
	b = make([]byte, 136)
	putF16(b, 0, 0.5)
	var sh uint16
	for ib := 0; ib < 8; ib++ {
		ls := 7*ib + 3
		b[4+ib/2] |= byte(ls&15) << (4 * (ib % 2))
		sh |= uint16(ls>>4) << (2 * ib)
	}
	binary.LittleEndian.PutUint16(b[2:], sh)
	for i := 0; i < 128; i++ {
		b[8+i] = byte(i*13 + 5)
	}
	checkDequant(t, gguf.IQ4_XS, b, func(e int) float32 {
		ib, j := e/32, e%32
		q := b[8+16*ib+j%16] & 15
		if j >= 16 {
			q = b[8+16*ib+j%16] >> 4
		}
		return 0.5 * float32(7*ib+3-32) * kv[q]
	})
}

// TestNewMatrixRefusesPartialBlocksAndUnsupportedTypes: rows that are not
// whole blocks, and GGML types without kernels, are refused by name.
func TestNewMatrixRefusesPartialBlocksAndUnsupportedTypes(t *testing.T) {
	if _, err := NewMatrix(gguf.Q5_K, 1, 128, make([]byte, 88)); err == nil || !strings.Contains(err.Error(), "whole number") {
		t.Errorf("Q5_K row of 128: err %v, want a whole-blocks refusal", err)
	}
	_, err := NewMatrix(gguf.IQ2_XXS, 1, 256, make([]byte, 66))
	if err == nil || !strings.Contains(err.Error(), "IQ2_XXS") || !strings.Contains(err.Error(), "supported: ") {
		t.Errorf("IQ2_XXS: err %v, want unsupported naming the supported types", err)
	}
}
