// Package gguf reads and writes GGUF model files (versions 2 and 3).
//
// A File is parsed from bytes that are usually a read-only memory map of
// the model, so tensor data is never copied: TensorData returns a slice of
// the map. Everything read from the file is checked against its size before
// use: counts are bounded by the bytes that remain, tensor extents must lie
// inside the data section, and every failure is an error wrapping ErrFormat
// that names the item and the byte offset. A hostile file can make Parse
// fail, never panic or allocate more than a small multiple of its size.
//
// Layout (little-endian): magic "GGUF", uint32 version, uint64 tensor count,
// uint64 metadata count, the metadata entries (string key, uint32 value
// type, value), the tensor infos (string name, uint32 n_dims, n_dims uint64
// dims with the fastest-varying first, uint32 type, uint64 offset relative
// to the data section), padding to general.alignment (default 32), then the
// data section. Strings are a uint64 length followed by bytes.
package gguf

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"math/bits"
	"os"
	"sync"
	"syscall"
)

// TensorInfo describes one tensor. Dims lists the extents with the
// fastest-varying (the row length) first, as GGML does.
type TensorInfo struct {
	Name   string
	Type   Type
	Dims   []uint64
	Offset uint64 // relative to the data section
	Size   uint64 // bytes
}

// Elems is the number of elements.
func (t *TensorInfo) Elems() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// File is a parsed GGUF file.
type File struct {
	Version   uint32
	KV        []KV
	Tensors   []TensorInfo
	Alignment int
	DataStart int // offset of the data section in the file

	data      []byte // the whole file
	kvIndex   map[string]int
	tensorIdx map[string]int
	unmap     func() error

	digestOnce sync.Once
	digest     string
}

// Open memory-maps the file at path and parses it. Close releases the map;
// tensor data slices must not be used after Close.
func Open(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	size := st.Size()
	if size == 0 {
		return nil, fmt.Errorf("%w: %s is empty", ErrFormat, path)
	}
	if size > math.MaxInt {
		return nil, fmt.Errorf("gguf: %s: %d bytes is too large to map", path, size)
	}
	data, err := syscall.Mmap(int(fh.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("gguf: mmap %s: %w", path, err)
	}
	f, err := Parse(data)
	if err != nil {
		syscall.Munmap(data)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.unmap = func() error { return syscall.Munmap(data) }
	return f, nil
}

// Close releases the memory map of a file returned by Open. It is a no-op
// for a file returned by Parse.
func (f *File) Close() error {
	if f.unmap == nil {
		return nil
	}
	u := f.unmap
	f.unmap = nil
	return u()
}

// Parse parses a GGUF file held in memory. The File refers to data; the
// caller must not modify it afterwards.
func Parse(data []byte) (*File, error) {
	r := &reader{buf: data}
	if m := r.u32("magic"); r.err == nil && m != magic {
		return nil, fmt.Errorf("%w: bad magic %#08x, not a GGUF file", ErrFormat, m)
	}
	f := &File{Version: r.u32("version"), data: data}
	if r.err == nil && f.Version != 2 && f.Version != 3 {
		if f.Version == 1 {
			return nil, fmt.Errorf("%w: GGUF version 1 is not supported (re-convert the model)", ErrFormat)
		}
		if bits.ReverseBytes32(f.Version) <= 3 {
			return nil, fmt.Errorf("%w: big-endian GGUF is not supported", ErrFormat)
		}
		return nil, fmt.Errorf("%w: unknown GGUF version %d", ErrFormat, f.Version)
	}
	nTensors := r.count(8+4+8+4+8, "tensor count")
	nKV := r.count(8+4+1, "metadata count")
	f.KV = make([]KV, 0, nKV)
	f.kvIndex = make(map[string]int, nKV)
	for i := 0; i < nKV && r.err == nil; i++ {
		key := r.str(fmt.Sprintf("metadata key #%d", i))
		t := ValueType(r.u32("value type of " + key))
		v := r.value(t, key, 0)
		if r.err != nil {
			break
		}
		if _, dup := f.kvIndex[key]; dup {
			r.fail("duplicate metadata key %q", key)
			break
		}
		f.kvIndex[key] = len(f.KV)
		f.KV = append(f.KV, KV{Key: key, Value: v})
	}
	f.Alignment = defaultAlignment
	if v, ok := f.kvIndex["general.alignment"]; ok && r.err == nil {
		a, ok := f.KV[v].Value.(uint32)
		if !ok || a == 0 || a&(a-1) != 0 || a > 1<<20 {
			return nil, fmt.Errorf("%w: general.alignment %v must be a uint32 power of two", ErrFormat, f.KV[v].Value)
		}
		f.Alignment = int(a)
	}
	f.Tensors = make([]TensorInfo, 0, nTensors)
	f.tensorIdx = make(map[string]int, nTensors)
	for i := 0; i < nTensors && r.err == nil; i++ {
		f.readTensorInfo(r, i)
	}
	if r.err != nil {
		return nil, r.err
	}
	f.DataStart = alignUp(r.off, f.Alignment)
	if f.DataStart > len(data) && len(f.Tensors) > 0 {
		return nil, fmt.Errorf("%w: data section starts at %d beyond file size %d", ErrFormat, f.DataStart, len(data))
	}
	dataSize := uint64(max(len(data)-f.DataStart, 0))
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.Offset%uint64(f.Alignment) != 0 {
			return nil, fmt.Errorf("%w: tensor %q: offset %d is not aligned to %d", ErrFormat, t.Name, t.Offset, f.Alignment)
		}
		if t.Offset > dataSize || t.Size > dataSize-t.Offset {
			return nil, fmt.Errorf("%w: tensor %q: bytes [%d, %d) of the data section beyond its size %d (truncated file?)",
				ErrFormat, t.Name, t.Offset, t.Offset+t.Size, dataSize)
		}
	}
	return f, nil
}

func (f *File) readTensorInfo(r *reader, i int) {
	name := r.str(fmt.Sprintf("tensor #%d name", i))
	nd := r.u32("n_dims of " + name)
	if r.err == nil && (nd == 0 || nd > maxDims) {
		r.fail("tensor %q: %d dimensions, want 1..%d", name, nd, maxDims)
	}
	t := TensorInfo{Name: name, Dims: make([]uint64, 0, 4)}
	elems := uint64(1)
	for d := uint32(0); d < nd && r.err == nil; d++ {
		n := r.u64("dims of " + name)
		if r.err != nil {
			return
		}
		hi, lo := bits.Mul64(elems, n)
		if n == 0 || hi != 0 || lo > 1<<50 {
			r.fail("tensor %q: dimension %d is %d (zero or absurd)", name, d, n)
			return
		}
		elems = lo
		t.Dims = append(t.Dims, n)
	}
	t.Type = Type(r.u32("type of " + name))
	t.Offset = r.u64("offset of " + name)
	if r.err != nil {
		return
	}
	if !t.Type.Known() {
		r.fail("tensor %q: tensor type %s is not a GGML type", name, t.Type)
		return
	}
	if t.Dims[0]%uint64(t.Type.BlockElems()) != 0 {
		r.fail("tensor %q: row of %d elements is not a whole number of %s blocks (%d)", name, t.Dims[0], t.Type, t.Type.BlockElems())
		return
	}
	t.Size = elems / uint64(t.Type.BlockElems()) * uint64(t.Type.BlockBytes())
	if _, dup := f.tensorIdx[name]; dup {
		r.fail("duplicate tensor name %q", name)
		return
	}
	f.tensorIdx[name] = len(f.Tensors)
	f.Tensors = append(f.Tensors, t)
}

func alignUp(n, a int) int { return (n + a - 1) / a * a }

// Tensor returns the info of the named tensor.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.tensorIdx[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// TensorData returns the bytes of a tensor (a slice of the file, not a copy).
func (f *File) TensorData(t *TensorInfo) []byte {
	start := uint64(f.DataStart) + t.Offset
	return f.data[start : start+t.Size : start+t.Size]
}

// DataSection returns every tensor's bytes as mapped: the file from
// DataStart on (a slice of the file, not a copy; read only).
func (f *File) DataSection() []byte {
	return f.data[f.DataStart:len(f.data):len(f.data)]
}

// Digest is the hex SHA-256 of the whole file: metadata and tensor data.
// Workers compare it to be sure they run the same model.
func (f *File) Digest() string {
	f.digestOnce.Do(func() {
		sum := sha256.Sum256(f.data)
		f.digest = hex.EncodeToString(sum[:])
	})
	return f.digest
}

// Size is the file's length in bytes.
func (f *File) Size() int { return len(f.data) }
