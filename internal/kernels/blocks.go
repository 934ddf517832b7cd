package kernels

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// Block layouts, byte for byte as GGML writes them (little endian). The
// structs document the layouts; the code reads the bytes at the offsets
// given by the constants below, because Go struct layout is not a file
// format.

// blockQ8_0 holds 32 weights: value[i] = d × qs[i].
type blockQ8_0 struct {
	d  uint16 // F16 scale
	qs [32]int8
}

// blockQ4_0 holds 32 weights as nibbles: byte j carries element j in its low
// nibble and element j+16 in its high nibble; value = d × (nibble − 8).
type blockQ4_0 struct {
	d  uint16 // F16 scale
	qs [16]byte
}

// blockQ4_K is a 256-weight super-block of eight 32-weight sub-blocks, each
// with a 6-bit scale sc[j] and 6-bit min m[j]:
// value = d×sc[j]×q − dmin×m[j], q a 4-bit unsigned nibble.
//
// scales packs the 8 (sc, m) pairs into 12 bytes: for j < 4, sc[j] is
// scales[j]&63 and m[j] is scales[j+4]&63; for j ≥ 4, sc[j] is
// scales[j+4]&15 | (scales[j-4]>>6)<<4 and m[j] is
// scales[j+4]>>4 | (scales[j]>>6)<<4.
//
// qs holds four 64-weight chunks of 32 bytes: in chunk c, byte l carries
// element 64c+l (sub-block 2c) in its low nibble and element 64c+32+l
// (sub-block 2c+1) in its high nibble.
type blockQ4_K struct {
	d, dmin uint16 // F16 super-scales for scales and mins
	scales  [12]byte
	qs      [128]byte
}

// blockQ6_K is a 256-weight super-block of sixteen 16-weight sub-blocks:
// value[e] = d × scales[e/16] × (q[e] − 32), q a 6-bit unsigned value.
//
// The 256 weights are two halves of 128; half h uses ql[64h:64h+64] and
// qh[32h:32h+32]. For l in [0,32), with L = ql[64h:], H = qh[32h:] and
// e = 128h+l:
//
//	q[e]    = L[l]&15    | (H[l]>>0&3)<<4
//	q[e+32] = L[l+32]&15 | (H[l]>>2&3)<<4
//	q[e+64] = L[l]>>4    | (H[l]>>4&3)<<4
//	q[e+96] = L[l+32]>>4 | (H[l]>>6&3)<<4
type blockQ6_K struct {
	ql     [128]byte // low 4 bits
	qh     [64]byte  // high 2 bits
	scales [16]int8
	d      uint16 // F16 super-scale
}

// Byte offsets inside the blocks above.
const (
	q4kOffScales = 4
	q4kOffQs     = 16
	q6kOffQh     = 128
	q6kOffScales = 192
	q6kOffD      = 208
)

var (
	_ = blockQ8_0{}
	_ = blockQ4_0{}
	_ = blockQ4_K{}
	_ = blockQ6_K{}
)

// ErrUnsupportedType is returned for a tensor type the kernels cannot use.
var ErrUnsupportedType = errors.New("kernels: unsupported tensor type")

// ErrShape is returned when a matrix's data or dimensions are inconsistent.
var ErrShape = errors.New("kernels: bad matrix shape")

// Matrix is a row-major weight matrix of Rows rows × Cols columns, each row
// encoded as Type (see the block layouts above). Rows are contiguous, each
// Type.RowBytes(Cols) long.
type Matrix struct {
	Type       gguf.Type
	Rows, Cols int
	Data       []byte

	q8p  []byte // Q8_0 on amd64: Data repacked for the row kernels (q8pack.go)
	f16p []byte // F16 under the AVX-512 set: Data repacked for one-token rows (f16pack.go)
}

// NewMatrix checks that data holds exactly rows encoded rows of cols
// elements of type t and wraps it without copying.
func NewMatrix(t gguf.Type, rows, cols int, data []byte) (*Matrix, error) {
	if !Supports(t) {
		return nil, fmt.Errorf("%w: %s (supported: %s)", ErrUnsupportedType, t, SupportedTypes())
	}
	if rows < 0 || cols < 0 {
		return nil, fmt.Errorf("%w: %d×%d", ErrShape, rows, cols)
	}
	rb, err := t.RowBytes(cols)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrShape, err)
	}
	if want := rb * rows; len(data) != want {
		return nil, fmt.Errorf("%w: %s %d×%d needs %d bytes, have %d", ErrShape, t, rows, cols, want, len(data))
	}
	m := &Matrix{Type: t, Rows: rows, Cols: cols, Data: data}
	if t == gguf.Q8_0 && packsQ8 {
		m.q8p = packQ8(data, rows, cols)
	}
	if t == gguf.F16 && packsF16(cols) {
		m.f16p = packF16(data, rows, cols)
	}
	return m, nil
}

// rowBytes is the encoded size of one row; the matrix is assumed valid.
func (m *Matrix) rowBytes() int {
	return m.Cols / m.Type.BlockElems() * m.Type.BlockBytes()
}

// row returns the encoded bytes of row r.
func (m *Matrix) row(r int) []byte {
	rb := m.rowBytes()
	return m.Data[r*rb : (r+1)*rb]
}

// DequantizeRow decodes row r into dst[:m.Cols] (used for embedding lookup).
func (m *Matrix) DequantizeRow(dst []float32, r int) {
	dequantize(m.Type, dst[:m.Cols], m.row(r))
}

func f16At(b []byte, off int) float32 { return F16ToF32(binary.LittleEndian.Uint16(b[off:])) }

// dequantize decodes len(dst) elements of type t from src.
func dequantize(t gguf.Type, dst []float32, src []byte) {
	if dequantOnly(t) {
		dequantizeExtra(t, dst, src)
		return
	}
	switch t {
	case gguf.F32:
		for i := range dst {
			dst[i] = float32frombytes(src[4*i:])
		}
	case gguf.F16:
		for i := range dst {
			dst[i] = f16At(src, 2*i)
		}
	case gguf.BF16:
		for i := range dst {
			dst[i] = BF16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case gguf.Q8_0:
		for b := 0; b < len(dst)/32; b++ {
			blk := src[34*b:]
			d := f16At(blk, 0)
			for i := 0; i < 32; i++ {
				dst[32*b+i] = d * float32(int8(blk[2+i]))
			}
		}
	case gguf.Q4_0:
		for b := 0; b < len(dst)/32; b++ {
			blk := src[18*b:]
			d := f16At(blk, 0)
			for j := 0; j < 16; j++ {
				q := blk[2+j]
				dst[32*b+j] = d * float32(int(q&15)-8)
				dst[32*b+j+16] = d * float32(int(q>>4)-8)
			}
		}
	case gguf.Q4_K:
		var q [256]uint8
		for b := 0; b < len(dst)/256; b++ {
			blk := src[144*b:]
			d, dmin := f16At(blk, 0), f16At(blk, 2)
			unpackQ4K(&q, blk)
			for j := 0; j < 8; j++ {
				sc, mn := q4kScaleMin(blk[q4kOffScales:], j)
				ds, dm := d*float32(sc), dmin*float32(mn)
				for i := 32 * j; i < 32*j+32; i++ {
					dst[256*b+i] = float32(ds*float32(q[i])) - dm // no fused multiply-add
				}
			}
		}
	case gguf.Q6_K:
		var q [256]uint8
		for b := 0; b < len(dst)/256; b++ {
			blk := src[210*b:]
			d := f16At(blk, q6kOffD)
			unpackQ6K(&q, blk)
			for e := 0; e < 256; e++ {
				sc := float32(int8(blk[q6kOffScales+e/16]))
				dst[256*b+e] = d * sc * float32(int(q[e])-32)
			}
		}
	}
}

// q4kScaleMin extracts the 6-bit scale and min of sub-block j from the
// 12-byte packed scales of a Q4_K block.
func q4kScaleMin(s []byte, j int) (sc, m uint8) {
	if j < 4 {
		return s[j] & 63, s[j+4] & 63
	}
	return s[j+4]&15 | (s[j-4]>>6)<<4, s[j+4]>>4 | (s[j]>>6)<<4
}

// unpackQ4K writes the 256 unsigned nibbles of a Q4_K block in element order.
func unpackQ4K(q *[256]uint8, blk []byte) {
	qs := blk[q4kOffQs : q4kOffQs+128]
	for c := 0; c < 4; c++ {
		for l := 0; l < 32; l++ {
			v := qs[32*c+l]
			q[64*c+l] = v & 15
			q[64*c+32+l] = v >> 4
		}
	}
}

// unpackQ6K writes the 256 unsigned 6-bit values of a Q6_K block in element
// order (still offset by 32).
func unpackQ6K(q *[256]uint8, blk []byte) {
	for h := 0; h < 2; h++ {
		L := blk[64*h : 64*h+64]
		H := blk[q6kOffQh+32*h : q6kOffQh+32*h+32]
		e := 128 * h
		for l := 0; l < 32; l++ {
			q[e+l] = L[l]&15 | (H[l]>>0&3)<<4
			q[e+l+32] = L[l+32]&15 | (H[l]>>2&3)<<4
			q[e+l+64] = L[l]>>4 | (H[l]>>4&3)<<4
			q[e+l+96] = L[l+32]>>4 | (H[l]>>6&3)<<4
		}
	}
}
