package gguf

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// Writer builds a GGUF v3 file: metadata in insertion order, then tensors
// in the order they were added. It is used for the project's own fixtures
// (random-weight models, the copy model) and by tests.
type Writer struct {
	kv        []KV
	tensors   []writerTensor
	keys      map[string]bool
	names     map[string]bool
	alignment int
}

type writerTensor struct {
	info TensorInfo
	data []byte
}

// NewWriter returns an empty writer with the default 32-byte alignment.
func NewWriter() *Writer {
	return &Writer{keys: map[string]bool{}, names: map[string]bool{}, alignment: defaultAlignment}
}

// Set adds a metadata entry. value must be a type KV documents; general.alignment
// must be a uint32 power of two.
func (w *Writer) Set(key string, value any) error {
	if w.keys[key] {
		return fmt.Errorf("gguf: duplicate metadata key %q", key)
	}
	if _, ok := valueTypeOf(value); !ok {
		return fmt.Errorf("gguf: %s: cannot store a %T", key, value)
	}
	if key == "general.alignment" {
		a, ok := value.(uint32)
		if !ok || a == 0 || a&(a-1) != 0 {
			return fmt.Errorf("gguf: general.alignment must be a uint32 power of two, got %v", value)
		}
		w.alignment = int(a)
	}
	w.keys[key] = true
	w.kv = append(w.kv, KV{Key: key, Value: value})
	return nil
}

// AddTensor adds a tensor. dims lists extents fastest-varying first; data
// must be exactly the encoded size.
func (w *Writer) AddTensor(name string, t Type, dims []uint64, data []byte) error {
	if w.names[name] {
		return fmt.Errorf("gguf: duplicate tensor %q", name)
	}
	if len(dims) == 0 || len(dims) > maxDims {
		return fmt.Errorf("gguf: tensor %q: %d dims, want 1..%d", name, len(dims), maxDims)
	}
	n := uint64(1)
	for _, d := range dims {
		n *= d
	}
	rb, err := t.RowBytes(int(dims[0]))
	if err != nil {
		return fmt.Errorf("gguf: tensor %q: %w", name, err)
	}
	want := uint64(rb) * (n / dims[0])
	if uint64(len(data)) != want {
		return fmt.Errorf("gguf: tensor %q: %d bytes of data, want %d", name, len(data), want)
	}
	w.names[name] = true
	w.tensors = append(w.tensors, writerTensor{
		info: TensorInfo{Name: name, Type: t, Dims: append([]uint64(nil), dims...), Size: want},
		data: data,
	})
	return nil
}

// WriteTo writes the file.
func (w *Writer) WriteTo(dst io.Writer) (int64, error) {
	cw := &countWriter{w: bufio.NewWriterSize(dst, 1<<20)}
	le := binary.LittleEndian
	put := func(v any) { binary.Write(cw, le, v) }
	putStr := func(s string) { put(uint64(len(s))); io.WriteString(cw, s) }

	put(uint32(magic))
	put(uint32(3))
	put(uint64(len(w.tensors)))
	put(uint64(len(w.kv)))
	for _, kv := range w.kv {
		putStr(kv.Key)
		writeValue(cw, kv.Value, true)
	}
	off := uint64(0)
	for i := range w.tensors {
		t := &w.tensors[i]
		t.info.Offset = off
		putStr(t.info.Name)
		put(uint32(len(t.info.Dims)))
		for _, d := range t.info.Dims {
			put(d)
		}
		put(uint32(t.info.Type))
		put(off)
		off = uint64(alignUp(int(off+t.info.Size), w.alignment))
	}
	pad := func() { cw.Write(make([]byte, alignUp(int(cw.n), w.alignment)-int(cw.n))) }
	pad()
	for _, t := range w.tensors {
		cw.Write(t.data)
		pad()
	}
	if cw.err == nil {
		cw.err = cw.w.Flush()
	}
	return cw.n, cw.err
}

// Bytes returns the encoded file.
func (w *Writer) Bytes() ([]byte, error) {
	var b bytes.Buffer
	_, err := w.WriteTo(&b)
	return b.Bytes(), err
}

// WriteFile writes the file to a temporary name beside path and renames
// it into place, so a crash never leaves a half-written model.
func (w *Writer) WriteFile(path string) error {
	tmp, err := createTemp(path)
	if err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := w.WriteTo(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("gguf: writing %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("gguf: writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("gguf: writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	return nil
}

// createTemp creates a new file beside path with a random name. Unlike
// os.CreateTemp (mode 0600) it asks for 0644 under the process umask, as
// any written file gets: a model is not a secret, and a server running as
// another user must be able to read it.
func createTemp(path string) (*os.File, error) {
	for range 100 {
		name := filepath.Join(filepath.Dir(path), fmt.Sprintf(".%s.tmp%d", filepath.Base(path), rand.Uint64()))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("no free temporary name beside %s", path)
}

type countWriter struct {
	w   *bufio.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}

// writeValue encodes v, preceded by its type tag when tagged is true.
func writeValue(w io.Writer, v any, tagged bool) {
	le := binary.LittleEndian
	t, _ := valueTypeOf(v)
	if tagged {
		binary.Write(w, le, uint32(t))
	}
	switch x := v.(type) {
	case string:
		binary.Write(w, le, uint64(len(x)))
		io.WriteString(w, x)
	case bool:
		b := uint8(0)
		if x {
			b = 1
		}
		w.Write([]byte{b})
	case float32:
		binary.Write(w, le, math.Float32bits(x))
	case float64:
		binary.Write(w, le, math.Float64bits(x))
	case Array:
		binary.Write(w, le, uint32(x.Elem))
		binary.Write(w, le, uint64(x.Len()))
		switch vs := x.Values.(type) {
		case []string:
			for _, s := range vs {
				writeValue(w, s, false)
			}
		case []Array:
			for _, a := range vs {
				writeValue(w, a, false)
			}
		case []bool:
			for _, b := range vs {
				writeValue(w, b, false)
			}
		default:
			binary.Write(w, le, vs) // fixed-size numeric slice
		}
	default:
		binary.Write(w, le, x) // fixed-size numeric scalar
	}
}

// NewArray wraps a typed slice as an Array, deriving the element type. It
// returns an error for slice types GGUF cannot store.
func NewArray(values any) (Array, error) {
	var t ValueType
	switch v := values.(type) {
	case []uint8:
		t = TypeUint8
	case []int8:
		t = TypeInt8
	case []uint16:
		t = TypeUint16
	case []int16:
		t = TypeInt16
	case []uint32:
		t = TypeUint32
	case []int32:
		t = TypeInt32
	case []float32:
		t = TypeFloat32
	case []bool:
		t = TypeBool
	case []string:
		t = TypeString
	case []uint64:
		t = TypeUint64
	case []int64:
		t = TypeInt64
	case []float64:
		t = TypeFloat64
	case []Array:
		t = TypeArray
	default:
		return Array{}, fmt.Errorf("gguf: cannot store an array of %T", v)
	}
	return Array{Elem: t, Values: values}, nil
}
