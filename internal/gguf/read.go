package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrFormat is wrapped by every error that reports a malformed file.
var ErrFormat = errors.New("gguf: malformed file")

const (
	magic            = 0x46554747 // "GGUF" little-endian
	defaultAlignment = 32
	maxArrayDepth    = 8
	maxDims          = 4
	maxStringLen     = 1 << 30
)

// reader is a bounds-checked little-endian cursor. The first failure sticks:
// later reads return zero values, so parse code checks err once per item.
type reader struct {
	buf []byte
	off int
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: at byte %d: %s", ErrFormat, r.off, fmt.Sprintf(format, args...))
	}
}

func (r *reader) remaining() int { return len(r.buf) - r.off }

func (r *reader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > r.remaining() {
		r.fail("%s needs %d bytes, only %d left (truncated file?)", what, n, r.remaining())
		return nil
	}
	b := r.buf[r.off : r.off+n]
	r.off += n
	return b
}

func (r *reader) u8(what string) uint8 {
	if b := r.take(1, what); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) u16(what string) uint16 {
	if b := r.take(2, what); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (r *reader) u32(what string) uint32 {
	if b := r.take(4, what); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *reader) u64(what string) uint64 {
	if b := r.take(8, what); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// count reads a uint64 element count and checks that count elements of at
// least minSize bytes each could fit in the rest of the file, so a hostile
// count can never make us allocate more than the file's size.
func (r *reader) count(minSize int, what string) int {
	n := r.u64(what)
	if r.err != nil {
		return 0
	}
	if minSize < 1 {
		minSize = 1
	}
	if n > uint64(r.remaining()/minSize) {
		r.fail("%s %d cannot fit in the %d bytes left", what, n, r.remaining())
		return 0
	}
	return int(n)
}

func (r *reader) str(what string) string {
	n := r.u64(what + " length")
	if r.err != nil {
		return ""
	}
	if n > maxStringLen || n > uint64(r.remaining()) {
		r.fail("%s length %d exceeds the %d bytes left", what, n, r.remaining())
		return ""
	}
	return string(r.take(int(n), what))
}

// scalar reads one value of a fixed-size or string type.
func (r *reader) scalar(t ValueType, what string) any {
	switch t {
	case TypeUint8:
		return r.u8(what)
	case TypeInt8:
		return int8(r.u8(what))
	case TypeUint16:
		return r.u16(what)
	case TypeInt16:
		return int16(r.u16(what))
	case TypeUint32:
		return r.u32(what)
	case TypeInt32:
		return int32(r.u32(what))
	case TypeFloat32:
		return math.Float32frombits(r.u32(what))
	case TypeBool:
		b := r.u8(what)
		if b > 1 {
			r.fail("%s: bool byte is %d, want 0 or 1", what, b)
		}
		return b == 1
	case TypeString:
		return r.str(what)
	case TypeUint64:
		return r.u64(what)
	case TypeInt64:
		return int64(r.u64(what))
	case TypeFloat64:
		return math.Float64frombits(r.u64(what))
	}
	r.fail("%s: unknown value type %d", what, uint32(t))
	return nil
}

func (r *reader) value(t ValueType, what string, depth int) any {
	if t != TypeArray {
		return r.scalar(t, what)
	}
	return r.array(what, depth)
}

func (r *reader) array(what string, depth int) any {
	if depth >= maxArrayDepth {
		r.fail("%s: arrays nested deeper than %d", what, maxArrayDepth)
		return nil
	}
	elem := ValueType(r.u32(what + " element type"))
	if r.err != nil {
		return nil
	}
	minSize := elem.fixedSize()
	switch elem {
	case TypeString:
		minSize = 8
	case TypeArray:
		minSize = 12
	}
	if minSize == 0 {
		r.fail("%s: unknown array element type %d", what, uint32(elem))
		return nil
	}
	n := r.count(minSize, what+" element count")
	if r.err != nil {
		return nil
	}
	a := Array{Elem: elem}
	le := binary.LittleEndian
	switch elem {
	case TypeUint8:
		a.Values = append([]uint8(nil), r.take(n, what)...)
	case TypeInt8:
		a.Values = decodeAll(r.take(n, what), 1, func(b []byte) int8 { return int8(b[0]) })
	case TypeUint16:
		a.Values = decodeAll(r.take(2*n, what), 2, le.Uint16)
	case TypeInt16:
		a.Values = decodeAll(r.take(2*n, what), 2, func(b []byte) int16 { return int16(le.Uint16(b)) })
	case TypeUint32:
		a.Values = decodeAll(r.take(4*n, what), 4, le.Uint32)
	case TypeInt32:
		a.Values = decodeAll(r.take(4*n, what), 4, func(b []byte) int32 { return int32(le.Uint32(b)) })
	case TypeFloat32:
		a.Values = decodeAll(r.take(4*n, what), 4, func(b []byte) float32 { return math.Float32frombits(le.Uint32(b)) })
	case TypeUint64:
		a.Values = decodeAll(r.take(8*n, what), 8, le.Uint64)
	case TypeInt64:
		a.Values = decodeAll(r.take(8*n, what), 8, func(b []byte) int64 { return int64(le.Uint64(b)) })
	case TypeFloat64:
		a.Values = decodeAll(r.take(8*n, what), 8, func(b []byte) float64 { return math.Float64frombits(le.Uint64(b)) })
	case TypeBool:
		b := r.take(n, what)
		v := make([]bool, len(b))
		for i, x := range b {
			if x > 1 {
				r.fail("%s[%d]: bool byte is %d, want 0 or 1", what, i, x)
				return nil
			}
			v[i] = x == 1
		}
		a.Values = v
	case TypeString:
		v := make([]string, n)
		for i := range v {
			v[i] = r.str(what)
			if r.err != nil {
				return nil
			}
		}
		a.Values = v
	case TypeArray:
		v := make([]Array, n)
		for i := range v {
			x, _ := r.array(what, depth+1).(Array)
			if r.err != nil {
				return nil
			}
			v[i] = x
		}
		a.Values = v
	}
	if r.err != nil {
		return nil
	}
	return a
}

// decodeAll decodes consecutive size-byte little-endian values. b is nil
// after a failed read, giving an empty slice (the error is in the reader).
func decodeAll[T any](b []byte, size int, decode func([]byte) T) []T {
	out := make([]T, len(b)/size)
	for i := range out {
		out[i] = decode(b[i*size:])
	}
	return out
}
