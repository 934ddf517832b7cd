package transfer

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// KVPages is the slice of model.KVStore (which the kvcache pool implements)
// that the store adapters need: the K and V blocks of physical page p in
// layer l, slot-major, KVDim elements per slot.
type KVPages interface {
	PageF16(layer, page int) (k, v []uint16)
	PageF32(layer, page int) (k, v []float32)
}

// StoreSource is a PageSource over a KV store: Pages maps the request's
// logical pages to physical ones (its page table, already verified).
type StoreSource struct {
	Store KVPages
	DType gguf.Type
	KVDim int
	Pages []int32
}

// AppendKV implements PageSource.
func (s StoreSource) AppendKV(dst []byte, layer, page, slots int) ([]byte, error) {
	if page < 0 || page >= len(s.Pages) {
		return dst, fmt.Errorf("transfer: logical page %d outside a %d-page table", page, len(s.Pages))
	}
	n := slots * s.KVDim
	if s.DType == gguf.F16 {
		k, v := s.Store.PageF16(layer, int(s.Pages[page]))
		if n > len(k) || n > len(v) {
			return dst, fmt.Errorf("transfer: %d slots exceed page of %d elements", slots, len(k))
		}
		return appendU16(appendU16(dst, k[:n]), v[:n]), nil
	}
	k, v := s.Store.PageF32(layer, int(s.Pages[page]))
	if n > len(k) || n > len(v) {
		return dst, fmt.Errorf("transfer: %d slots exceed page of %d elements", slots, len(k))
	}
	return appendF32(appendF32(dst, k[:n]), v[:n]), nil
}

// StoreSink is a PageSink over a KV store: Pages are the physical pages
// decode reserved, in logical order. It owns none of them: they go back to
// the pool when Await's error reaches the reservation (see PageSink.Drop).
type StoreSink struct {
	Store KVPages
	DType gguf.Type
	KVDim int
	Pages []int32
}

// WriteKV implements PageSink.
func (s StoreSink) WriteKV(layer, page, slots int, kv []byte) error {
	if page < 0 || page >= len(s.Pages) {
		return fmt.Errorf("transfer: logical page %d outside a %d-page reservation", page, len(s.Pages))
	}
	n := slots * s.KVDim
	if s.DType == gguf.F16 {
		k, v := s.Store.PageF16(layer, int(s.Pages[page]))
		if n > len(k) || n > len(v) || len(kv) != 4*n {
			return fmt.Errorf("transfer: %d bytes for %d slots do not fit page of %d elements", len(kv), slots, len(k))
		}
		readU16(k[:n], kv[:2*n])
		readU16(v[:n], kv[2*n:])
		return nil
	}
	k, v := s.Store.PageF32(layer, int(s.Pages[page]))
	if n > len(k) || n > len(v) || len(kv) != 8*n {
		return fmt.Errorf("transfer: %d bytes for %d slots do not fit page of %d elements", len(kv), slots, len(k))
	}
	readF32(k[:n], kv[:4*n])
	readF32(v[:n], kv[4*n:])
	return nil
}

// Drop implements PageSink. A StoreSink holds nothing to release.
func (s StoreSink) Drop() {}

// nativeLE reports a little-endian host, where element slices are copied as
// bytes instead of converted one by one.
var nativeLE = func() bool { x := uint16(1); return *(*byte)(unsafe.Pointer(&x)) == 1 }()

func appendU16(dst []byte, s []uint16) []byte {
	if nativeLE && len(s) > 0 {
		return append(dst, unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 2*len(s))...)
	}
	for _, x := range s {
		dst = le.AppendUint16(dst, x)
	}
	return dst
}

func appendF32(dst []byte, s []float32) []byte {
	if nativeLE && len(s) > 0 {
		return append(dst, unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s))...)
	}
	for _, x := range s {
		dst = le.AppendUint32(dst, math.Float32bits(x))
	}
	return dst
}

func readU16(dst []uint16, b []byte) {
	if nativeLE && len(dst) > 0 {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), 2*len(dst)), b)
		return
	}
	for i := range dst {
		dst[i] = le.Uint16(b[2*i:])
	}
}

func readF32(dst []float32, b []byte) {
	if nativeLE && len(dst) > 0 {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), 4*len(dst)), b)
		return
	}
	for i := range dst {
		dst[i] = math.Float32frombits(le.Uint32(b[4*i:]))
	}
}
