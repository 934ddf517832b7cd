package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// sampleWriter builds a file that uses every metadata type, nested arrays
// and tensors of several types.
func sampleWriter(t testing.TB) *Writer {
	t.Helper()
	w := NewWriter()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.Set("general.architecture", "llama"))
	must(w.Set("u8", uint8(200)))
	must(w.Set("i8", int8(-100)))
	must(w.Set("u16", uint16(60000)))
	must(w.Set("i16", int16(-30000)))
	must(w.Set("u32", uint32(4000000000)))
	must(w.Set("i32", int32(-2000000000)))
	must(w.Set("f32", float32(1.5)))
	must(w.Set("b", true))
	must(w.Set("u64", uint64(1)<<60))
	must(w.Set("i64", int64(-1)<<60))
	must(w.Set("f64", math.Pi))
	must(w.Set("s", "héllo ▁ world"))
	arr := func(v any) Array {
		a, err := NewArray(v)
		must(err)
		return a
	}
	must(w.Set("a.strings", arr([]string{"a", "", "ccc"})))
	must(w.Set("a.f32", arr([]float32{0.5, -2})))
	must(w.Set("a.i32", arr([]int32{1, -2, 3})))
	must(w.Set("a.u8", arr([]uint8{1, 2})))
	must(w.Set("a.bool", arr([]bool{true, false})))
	must(w.Set("a.nested", arr([]Array{arr([]int64{7, 8}), arr([]string{"x"})})))
	must(w.Set("a.i8", arr([]int8{-1, 2})))
	must(w.Set("a.u16", arr([]uint16{1, 65535})))
	must(w.Set("a.i16", arr([]int16{-2, 3})))
	must(w.Set("a.u32", arr([]uint32{4000000000})))
	must(w.Set("a.u64", arr([]uint64{1 << 63})))
	must(w.Set("a.f64", arr([]float64{-0.5, 2.25})))
	f32 := make([]byte, 4*6)
	for i := range 6 {
		binary.LittleEndian.PutUint32(f32[4*i:], math.Float32bits(float32(i)))
	}
	must(w.AddTensor("w.f32", F32, []uint64{3, 2}, f32))
	must(w.AddTensor("w.q8", Q8_0, []uint64{64, 1}, bytes.Repeat([]byte{1}, 68)))
	must(w.AddTensor("w.f16", F16, []uint64{5}, make([]byte, 10)))
	return w
}

func TestWriteThenParseRoundTripsEveryValueType(t *testing.T) {
	data, err := sampleWriter(t).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || len(f.KV) != 25 || len(f.Tensors) != 3 {
		t.Fatalf("version %d, %d kv, %d tensors", f.Version, len(f.KV), len(f.Tensors))
	}
	want := map[string]any{
		"u8": uint8(200), "i8": int8(-100), "u16": uint16(60000), "i16": int16(-30000),
		"u32": uint32(4000000000), "i32": int32(-2000000000), "f32": float32(1.5), "b": true,
		"u64": uint64(1) << 60, "i64": int64(-1) << 60, "f64": math.Pi, "s": "héllo ▁ world",
	}
	for k, v := range want {
		got, ok := f.Value(k)
		if !ok || got != v {
			t.Errorf("%s = %#v (%v), want %#v", k, got, ok, v)
		}
	}
	if s, err := f.Strings("a.strings"); err != nil || strings.Join(s, ",") != "a,,ccc" {
		t.Errorf("a.strings = %q, %v", s, err)
	}
	if v, err := f.Float32s("a.f32"); err != nil || len(v) != 2 || v[1] != -2 {
		t.Errorf("a.f32 = %v, %v", v, err)
	}
	if v, err := f.Int32s("a.u8"); err != nil || len(v) != 2 || v[1] != 2 {
		t.Errorf("a.u8 as int32s = %v, %v", v, err)
	}
	for key, want := range map[string]any{
		"a.i8": []int8{-1, 2}, "a.u16": []uint16{1, 65535}, "a.i16": []int16{-2, 3},
		"a.u32": []uint32{4000000000}, "a.u64": []uint64{1 << 63}, "a.f64": []float64{-0.5, 2.25},
	} {
		v, _ := f.Value(key)
		if got := v.(Array).Values; !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", key, got, want)
		}
	}
	nested, _ := f.Value("a.nested")
	inner := nested.(Array).Values.([]Array)
	if len(inner) != 2 || inner[0].Values.([]int64)[1] != 8 || inner[1].Values.([]string)[0] != "x" {
		t.Errorf("nested = %#v", nested)
	}
	ti, ok := f.Tensor("w.f32")
	if !ok || ti.Type != F32 || ti.Elems() != 6 || ti.Size != 24 {
		t.Fatalf("w.f32 = %+v", ti)
	}
	d := f.TensorData(ti)
	if math.Float32frombits(binary.LittleEndian.Uint32(d[20:])) != 5 {
		t.Errorf("tensor data not round-tripped: % x", d)
	}
	for _, ti := range f.Tensors {
		if (uint64(f.DataStart)+ti.Offset)%uint64(f.Alignment) != 0 {
			t.Errorf("tensor %s at unaligned offset", ti.Name)
		}
	}
	if n, err := f.Int("u64"); err != nil || n != 1<<60 {
		t.Errorf("Int(u64) = %d, %v", n, err)
	}
	if _, err := f.String("missing"); !errors.Is(err, ErrNoKey) {
		t.Errorf("missing key error = %v, want ErrNoKey", err)
	}
	if _, err := f.String("u8"); err == nil || errors.Is(err, ErrNoKey) {
		t.Errorf("wrong-type error = %v", err)
	}
}

func TestParseRejectsEveryTruncation(t *testing.T) {
	data, err := sampleWriter(t).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	f, _ := Parse(data)
	end := f.DataStart + int(f.Tensors[len(f.Tensors)-1].Offset+f.Tensors[len(f.Tensors)-1].Size)
	for n := 0; n < end; n++ {
		_, err := Parse(data[:n])
		if err == nil {
			t.Fatalf("truncated to %d of %d bytes: no error", n, end)
		}
		if !errors.Is(err, ErrFormat) {
			t.Fatalf("truncated to %d: error %v does not wrap ErrFormat", n, err)
		}
	}
}

func header(nTensors, nKV uint64) []byte {
	b := binary.LittleEndian.AppendUint32(nil, magic)
	b = binary.LittleEndian.AppendUint32(b, 3)
	b = binary.LittleEndian.AppendUint64(b, nTensors)
	return binary.LittleEndian.AppendUint64(b, nKV)
}

func appendStr(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

func TestParseRejectsHostileInput(t *testing.T) {
	le := binary.LittleEndian
	tensor := func(name string, dims []uint64, typ Type, off uint64) []byte {
		b := header(1, 0)
		b = appendStr(b, name)
		b = le.AppendUint32(b, uint32(len(dims)))
		for _, d := range dims {
			b = le.AppendUint64(b, d)
		}
		b = le.AppendUint32(b, uint32(typ))
		b = le.AppendUint64(b, off)
		for len(b)%32 != 0 {
			b = append(b, 0)
		}
		return append(b, make([]byte, 64)...)
	}
	kv := func(key string, typ ValueType, payload []byte) []byte {
		b := header(0, 1)
		b = appendStr(b, key)
		b = le.AppendUint32(b, uint32(typ))
		return append(b, payload...)
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "magic"},
		{"bad magic", []byte("GGML\x03\x00\x00\x00"), "bad magic"},
		{"version 1", append(le.AppendUint32(nil, magic), 1, 0, 0, 0), "version 1"},
		{"version 99", append(le.AppendUint32(nil, magic), 99, 0, 0, 0), "unknown GGUF version"},
		{"big endian", append(le.AppendUint32(nil, magic), 0, 0, 0, 3), "big-endian"},
		{"huge tensor count", header(1<<62, 0), "tensor count"},
		{"huge kv count", header(0, 1<<62), "metadata count"},
		{"huge string", kv("k", TypeString, le.AppendUint64(nil, 1<<40)), "length"},
		{"huge array", kv("k", TypeArray, le.AppendUint64(le.AppendUint32(nil, uint32(TypeUint32)), 1<<61)), "element count"},
		{"unknown value type", kv("k", 99, nil), "unknown value type"},
		{"unknown array elem", kv("k", TypeArray, le.AppendUint32(nil, 77)), "unknown array element type"},
		{"bad bool", kv("k", TypeBool, []byte{7}), "bool byte"},
		{"deep nesting", kv("k", TypeArray, bytes.Repeat(le.AppendUint64(le.AppendUint32(nil, uint32(TypeArray)), 1), 20)), "nested deeper"},
		{"bad alignment", kv("general.alignment", TypeUint32, le.AppendUint32(nil, 3)), "alignment"},
		{"zero dims", tensor("t", nil, F32, 0), "dimensions"},
		{"five dims", tensor("t", []uint64{1, 1, 1, 1, 1}, F32, 0), "dimensions"},
		{"zero extent", tensor("t", []uint64{4, 0}, F32, 0), "zero or absurd"},
		{"overflowing extent", tensor("t", []uint64{1 << 40, 1 << 40}, F32, 0), "zero or absurd"},
		{"unknown tensor type", tensor("t", []uint64{4}, Type(99), 0), "not a GGML type"},
		{"partial block", tensor("t", []uint64{33}, Q8_0, 0), "whole number"},
		{"unaligned offset", tensor("t", []uint64{4}, F32, 4), "not aligned"},
		{"data beyond file", tensor("t", []uint64{1024}, F32, 0), "beyond its size"},
		{"offset beyond file", tensor("t", []uint64{4}, F32, 1<<40), "beyond its size"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.data)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
		})
	}
}

func TestParseRejectsDuplicates(t *testing.T) {
	w := NewWriter()
	w.Set("a", uint8(1))
	if err := w.Set("a", uint8(2)); err == nil {
		t.Error("writer accepted a duplicate key")
	}
	if err := w.AddTensor("t", F32, []uint64{1}, make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("t", F32, []uint64{1}, make([]byte, 4)); err == nil {
		t.Error("writer accepted a duplicate tensor")
	}
	// Hand-build a file with a duplicate key: the reader must refuse it.
	b := header(0, 2)
	for range 2 {
		b = appendStr(b, "k")
		b = binary.LittleEndian.AppendUint32(b, uint32(TypeUint8))
		b = append(b, 1)
	}
	if _, err := Parse(b); err == nil || !strings.Contains(err.Error(), "duplicate metadata key") {
		t.Errorf("duplicate key: err = %v", err)
	}
}

func TestWriterRejectsWrongDataSize(t *testing.T) {
	w := NewWriter()
	if err := w.AddTensor("t", Q8_0, []uint64{32, 2}, make([]byte, 34)); err == nil {
		t.Error("accepted 34 bytes for two Q8_0 rows")
	}
	if err := w.AddTensor("t", Q8_0, []uint64{30}, make([]byte, 34)); err == nil {
		t.Error("accepted a partial block")
	}
	if err := w.Set("x", struct{}{}); err == nil {
		t.Error("accepted an unstorable value")
	}
}

func TestOpenMapsFileAndWriteFileIsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	if err := sampleWriter(t).WriteFile(path); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("WriteFile left %d files, want 1", len(entries))
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if a, _ := f.Architecture(); a != "llama" {
		t.Errorf("architecture %q", a)
	}
	data, _ := os.ReadFile(path)
	g, _ := Parse(data)
	if f.Digest() != g.Digest() || len(f.Digest()) != 64 {
		t.Errorf("digest of mapped and read file differ")
	}
	// A truncated copy fails to open with an error naming the file.
	bad := filepath.Join(dir, "bad.gguf")
	last := &g.Tensors[len(g.Tensors)-1]
	os.WriteFile(bad, data[:g.DataStart+int(last.Offset+last.Size)-1], 0o644)
	if _, err := Open(bad); err == nil || !strings.Contains(err.Error(), "bad.gguf") {
		t.Errorf("truncated file: err = %v", err)
	}
	empty := filepath.Join(dir, "empty.gguf")
	os.WriteFile(empty, nil, 0o644)
	if _, err := Open(empty); err == nil {
		t.Error("empty file opened")
	}
	if _, err := Open(filepath.Join(dir, "absent")); err == nil {
		t.Error("absent file opened")
	}
}

func TestRowBytes(t *testing.T) {
	for _, c := range []struct {
		t    Type
		n    int
		want int
	}{{F32, 3, 12}, {F16, 3, 6}, {BF16, 2, 4}, {Q8_0, 64, 68}, {Q4_0, 32, 18}, {Q4_K, 512, 288}, {Q6_K, 256, 210}} {
		if got, err := c.t.RowBytes(c.n); err != nil || got != c.want {
			t.Errorf("%s.RowBytes(%d) = %d, %v; want %d", c.t, c.n, got, err, c.want)
		}
	}
	if _, err := Q4_K.RowBytes(100); err == nil {
		t.Error("Q4_K.RowBytes(100) accepted a partial block")
	}
	if _, err := Type(5).RowBytes(4); err == nil {
		t.Error("unknown type accepted")
	}
}

// sharedFile returns the path of a file in ../shared/testdata or skips.
func sharedFile(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join("..", "..", "..", "shared", "testdata", rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("reference data %s not present (../shared/testdata is absent): %v", rel, err)
	}
	return p
}

func TestOpensReferenceFiles(t *testing.T) {
	f, err := Open(sharedFile(t, "models/llama-2-tiny-random.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Digest() != "81f226c62d28ed4a1a9b9fa080fcd9f0cc40e0f9d5680036583ff98fbcd035cb" {
		t.Errorf("digest %s does not match SOURCE.md", f.Digest())
	}
	if len(f.Tensors) != 12 {
		t.Errorf("%d tensors, SOURCE.md says 12", len(f.Tensors))
	}
	var params uint64
	for _, ti := range f.Tensors {
		params += ti.Elems()
	}
	if params != 513048 {
		t.Errorf("%d parameters, SOURCE.md says 513048", params)
	}
	toks, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil || len(toks) != 32000 {
		t.Fatalf("tokens: %d, %v", len(toks), err)
	}
	for _, name := range []string{"vocab/ggml-vocab-qwen2.gguf", "vocab/ggml-vocab-llama-bpe.gguf", "vocab/ggml-vocab-phi-3.gguf"} {
		v, err := Open(sharedFile(t, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(v.Tensors) != 0 {
			t.Errorf("%s: vocab-only file has %d tensors", name, len(v.Tensors))
		}
		v.Close()
	}
}

func FuzzParse(f *testing.F) {
	data, err := sampleWriter(f).Bytes()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:100])
	f.Add(header(0, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error does not wrap ErrFormat: %v", err)
			}
			return
		}
		for i := range file.Tensors {
			_ = file.TensorData(&file.Tensors[i]) // must be in range
		}
	})
}

// GGUF v2 has the v3 layout (64-bit counts); only the version differs.
func TestParsesVersion2(t *testing.T) {
	data, err := sampleWriter(t).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(data[4:], 2)
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 2 || len(f.Tensors) != 3 {
		t.Fatalf("v2: version %d, %d tensors", f.Version, len(f.Tensors))
	}
}

// TestWriteFileIsReadableByOthers: a written model gets 0644 under the
// umask, like any file a tool writes, not os.CreateTemp's 0600 (a server
// running as another user could not open it).
func TestWriteFileIsReadableByOthers(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := sampleWriter(t).WriteFile(path); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0o644 {
		t.Errorf("mode %v, want -rw-r--r--", st.Mode().Perm())
	}
}

// TestTypeTableEdges checks the type table's lookups at its edges: the
// numbers GGML retired and numbers past the table are unknown (no block
// size, a numbered name) and never index out of it.
func TestTypeTableEdges(t *testing.T) {
	for _, typ := range []Type{4, 5, 31, 33, 36, 38, 40, 1 << 20, 1<<32 - 1} {
		if typ.Known() || typ.BlockElems() != 0 || typ.BlockBytes() != 0 {
			t.Errorf("type %d: Known %v, %d elements in %d bytes", uint32(typ), typ.Known(), typ.BlockElems(), typ.BlockBytes())
		}
		if _, err := typ.RowBytes(256); err == nil {
			t.Errorf("type %d: RowBytes gave no error", uint32(typ))
		}
		if got, want := typ.String(), fmt.Sprintf("type(%d)", uint32(typ)); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
	if !MXFP4.Known() || MXFP4.BlockElems() != 32 || MXFP4.BlockBytes() != 17 || F32.String() != "F32" {
		t.Errorf("known types: MXFP4 %v %d/%d, F32 %q", MXFP4.Known(), MXFP4.BlockElems(), MXFP4.BlockBytes(), F32.String())
	}
}
