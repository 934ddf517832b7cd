package model

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kernels"
)

// mappedRange is the address range of a file's tensor data.
func mappedRange(f *gguf.File) (lo, hi uintptr) {
	lo = ^uintptr(0)
	for i := range f.Tensors {
		d := f.TensorData(&f.Tensors[i])
		if len(d) == 0 {
			continue
		}
		p := uintptr(unsafe.Pointer(unsafe.SliceData(d)))
		lo, hi = min(lo, p), max(hi, p+uintptr(len(d)))
	}
	return lo, hi
}

// weightMatrices lists every weight matrix of m, experts included.
func weightMatrices(m *Model) []*kernels.Matrix {
	ws := []*kernels.Matrix{m.embd, m.output}
	for _, l := range m.layers {
		ws = append(ws, l.wq, l.wk, l.wv, l.wo, l.wGate, l.wUp, l.wDown)
		if l.moe != nil {
			ws = append(ws, l.moe.router)
			ws = append(append(append(ws, l.moe.gate...), l.moe.up...), l.moe.down...)
		}
	}
	return ws
}

// checkViewsOfTheMapping fails unless every weight matrix of m is a view
// of f's mapped tensor data (not a copy on the heap).
func checkViewsOfTheMapping(t *testing.T, m *Model, f *gguf.File) int {
	t.Helper()
	lo, hi := mappedRange(f)
	n := 0
	for _, w := range weightMatrices(m) {
		if w == nil || len(w.Data) == 0 {
			continue
		}
		p := uintptr(unsafe.Pointer(unsafe.SliceData(w.Data)))
		if p < lo || p+uintptr(len(w.Data)) > hi {
			t.Errorf("a %v matrix of %d×%d lies outside the file's mapping: weights were copied", w.Type, w.Rows, w.Cols)
		}
		n++
	}
	return n
}

// rss reads the process's anonymous and file-backed resident memory.
func rss(t *testing.T) (anon, file int64) {
	t.Helper()
	fh, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status (%v): resident-memory check skipped", err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "RssAnon" && k != "RssFile") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		if k == "RssAnon" {
			anon = kb << 10
		} else {
			file = kb << 10
		}
	}
	return anon, file
}

// TestWeightsStayMemoryMapped loads a model from disk and runs it: every
// weight is a view of the mapping and the file's pages become resident as
// file-backed memory. A Q4_K model's heap grows by far less than its
// weights (they are not copied); a Q8_0 model's grows by about its weights,
// the copy its row kernels read (kernels/q8pack.go), and by no more.
func TestWeightsStayMemoryMapped(t *testing.T) {
	for _, typ := range []gguf.Type{gguf.Q4_K, gguf.Q8_0} {
		t.Run(typ.String(), func(t *testing.T) { testWeightsStayMemoryMapped(t, typ) })
	}
}

func testWeightsStayMemoryMapped(t *testing.T, typ gguf.Type) {
	sh := Shape{Name: "mapped", Arch: "llama", Embd: 1024, Layers: 4, Heads: 8, KVHeads: 4, FF: 4096,
		Vocab: 8192, Context: 256, RopeBase: 10000, NormEps: 1e-5}
	path := filepath.Join(t.TempDir(), "mapped.gguf")
	func() { // the writer's buffers die here, before the first reading
		w := gguf.NewWriter()
		if err := WriteRandom(w, sh, typ, 1, nil); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteFile(path); err != nil {
			t.Fatal(err)
		}
	}()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	size := st.Size()
	debug.FreeOSMemory()
	anon0, file0 := rss(t)
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := Load(f, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	n := checkViewsOfTheMapping(t, m, f)
	if n < 4*7 {
		t.Fatalf("checked %d matrices, want at least %d", n, 4*7)
	}
	var packed int64 // the Q8_0 matrices' bytes
	for _, w := range weightMatrices(m) {
		if w != nil && w.Type == gguf.Q8_0 {
			packed += int64(len(w.Data))
		}
	}
	kv, err := NewSimpleKV(&m.Config, 4, 16, gguf.F16)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Forward(kv, []Seq{{Tokens: []int32{1, 2, 3, 4}, Pos: 0, Pages: []int32{0}}}); err != nil {
		t.Fatal(err)
	}
	debug.FreeOSMemory()
	anon1, file1 := rss(t)
	runtime.KeepAlive(m) // measured while the model lives
	t.Logf("file %d MB: heap-backed resident +%d MB (Q8_0 matrices %d MB), file-backed resident +%d MB",
		size>>20, (anon1-anon0)>>20, packed>>20, (file1-file0)>>20)
	if grown := file1 - file0; grown < size/2 {
		t.Errorf("file-backed resident memory grew by %d bytes after a forward pass over a %d-byte file: weights are not read through the mapping", grown, size)
	}
	if typ == gguf.Q8_0 && packed < size/2 {
		t.Fatalf("Q8_0 model: only %d of %d bytes are Q8_0 matrices", packed, size)
	}
	if grown := anon1 - anon0; grown > packed+size/4 {
		t.Errorf("anonymous resident memory grew by %d bytes for a %d-byte file with %d bytes of Q8_0 matrices: weights were copied", grown, size, packed)
	}
	if grown := anon1 - anon0; grown < packed*3/4 {
		t.Errorf("anonymous resident memory grew by %d bytes with %d bytes of Q8_0 matrices: their packed copy is not resident", grown, packed)
	}
}

// TestExpertTensorsAreNotCopied checks the qwen3moe zoo file's experts
// (3-D tensors) are row views of the mapping.
func TestExpertTensorsAreNotCopied(t *testing.T) {
	m, f := loadZooFile(t, "random-qwen3moe-Q8_0.gguf", "expert mapping check")
	experts := 0
	for _, l := range m.layers {
		if l.moe != nil {
			experts += len(l.moe.gate) + len(l.moe.up) + len(l.moe.down)
		}
	}
	if experts == 0 {
		t.Fatal("the qwen3moe file loaded with no expert matrices")
	}
	checkViewsOfTheMapping(t, m, f)
}

// loadZooFile opens and loads one zoo model for a test, skipping it (with
// what is skipped) when ../shared is absent. The file closes at cleanup.
func loadZooFile(t *testing.T, name, what string) (*Model, *gguf.File) {
	t.Helper()
	path := filepath.Join(zooDir, name)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("zoo absent (%s): %s skipped", path, what)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := Load(f, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	return m, f
}
