package kernels

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// allKernelSets are every kernel set bulkhead has; a test runs those the
// CPU supports (KernelSets) and logs the others as skipped.
var allKernelSets = []string{"go", "avx2", "avx512"}

// forEachKernelSet runs f with each supported kernel set in use, restoring
// the default afterwards.
func forEachKernelSet(t testing.TB, f func(name string)) {
	t.Helper()
	def := impl
	defer func() { impl = def }()
	for _, name := range allKernelSets {
		if err := setKernels(name); err != nil {
			t.Logf("kernel set %s skipped: %v", name, err)
			continue
		}
		f(name)
	}
}

// forEachRowStreams runs f with one and with two weight streams per
// thread (rowStreams), whatever this CPU's default, restoring it after.
func forEachRowStreams(f func(streams int)) {
	def := rowStreams
	defer func() { rowStreams = def }()
	for _, n := range []int{1, 2} {
		rowStreams = n
		f(n)
	}
}

// rawF16Fields are the F16 scale offsets of the types whose test matrices
// here are random bytes (every quant bit pattern, Q8_0's −128 included).
var rawF16Fields = map[gguf.Type][]int{gguf.Q8_0: {0}, gguf.Q4_0: {0}, gguf.Q4_K: {0, 2}, gguf.Q6_K: {208}}

// rawMatrix is a rows×cols matrix of random blocks of typ with finite F16
// scales of random sign, magnitude 2^-8..2^-5.
func rawMatrix(t testing.TB, r *rand.Rand, typ gguf.Type, rows, cols int) *Matrix {
	t.Helper()
	data := randBlocksWith(r, typ, rows, cols, rawF16Fields[typ])
	m, err := NewMatrix(typ, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestKernelSetsEqualReferenceBitForBit checks every supported kernel set
// (AVX-512, AVX2, reference) against the pure-Go reference, bit for bit,
// on the decode types: quantized and random-byte blocks, odd row and block
// counts, batches 1..17 (every tile remainder, and the K-quants' switch to
// the unpacked path past 16), on one and two threads. Since the reference
// computes each (row, token) alone, equality at every batch and thread
// count is also I8's batch and thread invariance. Each runs with one and
// two weight streams per thread (rowStreams: the row order, and whether
// F16 is packed).
func TestKernelSetsEqualReferenceBitForBit(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	types := []gguf.Type{gguf.Q8_0, gguf.Q4_0, gguf.Q4_K, gguf.Q6_K, gguf.F16, gguf.BF16, gguf.F32, gguf.Q5_K}
	cols := map[int][]int{256: {256, 768}, 32: {32, 96, 2080}, 1: {8, 77, 584}}
	rowsList := []int{1, 2, 3, 7, 8, 9, 17, 33}
	maxBatch := 17
	if short() {
		rowsList, maxBatch = []int{3, 9, 17}, 9
	}
	p1, p2 := NewPool(1), NewPool(2)
	defer p1.Close()
	defer p2.Close()
	forEachKernelSet(t, func(name string) {
		forEachRowStreams(func(streams int) {
			for _, typ := range types {
				for _, c := range cols[typ.BlockElems()] {
					for _, rows := range rowsList {
						ms := []*Matrix{randMatrix(t, r, typ, rows, c)}
						if _, ok := rawF16Fields[typ]; ok {
							ms = append(ms, rawMatrix(t, r, typ, rows, c))
						}
						for mi, m := range ms {
							x := randVec(r, maxBatch*c, 1)
							want := make([]float32, maxBatch*rows)
							MatMulRef(want, m, x, maxBatch)
							for batch := 1; batch <= maxBatch; batch++ {
								for pi, p := range []*Pool{p1, p2} {
									got := make([]float32, batch*rows)
									p.MatMul(got, m, x, batch)
									for i := range got {
										if !sameBits(got[i], want[i]) {
											t.Fatalf("%s, %d streams: %s matrix %d %d×%d batch %d threads %d: out[%d] = %g, reference %g",
												name, streams, typ, mi, rows, c, batch, pi+1, i, got[i], want[i])
										}
									}
								}
							}
						}
					}
				}
			}
			t.Logf("kernel set %s, %d weight streams: bit-equal to the reference", name, streams)
		})
	})
}

// TestSetKernels checks the override used by BULKHEAD_KERNELS: the named
// set becomes the implementation, an unknown one is refused.
func TestSetKernels(t *testing.T) {
	def := impl
	defer func() { impl = def }()
	if got := KernelSets(); got[0] != "go" || got[len(got)-1] != def.name {
		t.Fatalf("KernelSets() = %v, default %s", got, def.name)
	}
	for _, name := range KernelSets() {
		if err := setKernels(name); err != nil || Implementation() != name {
			t.Fatalf("setKernels(%s): %v, implementation %s", name, err, Implementation())
		}
	}
	if err := setKernels("ref"); err != nil || Implementation() != "go" {
		t.Fatalf("setKernels(ref): %v, implementation %s", err, Implementation())
	}
	if err := setKernels("avx1024"); err == nil {
		t.Fatal("setKernels(avx1024) accepted")
	}
}

// BenchmarkDecodeRows streams Llama-3.2-1B-shaped weights (2048×8192 and
// 8192×2048 matrices, cycled over ≥ 512 MB so nothing stays in the last-
// level cache) through MatMul at 1, 4 and 16 tokens on one thread, for
// each supported kernel set, reporting weight bandwidth: MB/s (wall clock)
// and GB/cpu-s (per CPU-second of the process, steadier on a shared
// machine). Compare sets within one run; alternate runs.
func BenchmarkDecodeRows(b *testing.B) {
	r := rand.New(rand.NewPCG(41, 42))
	p := NewPool(1)
	defer p.Close()
	for _, typ := range []gguf.Type{gguf.Q4_K, gguf.Q6_K, gguf.Q8_0, gguf.Q4_0, gguf.F16} {
		var ms []*Matrix
		var total int
		for i := 0; total < 512<<20; i++ {
			rows, cols := 8192, 2048
			if i%2 == 1 {
				rows, cols = 2048, 8192
			}
			m := rawOrRand(b, r, typ, rows, cols)
			ms = append(ms, m)
			total += len(m.Data)
		}
		for _, batch := range []int{1, 4, 16} {
			x := randVec(r, batch*8192, 1)
			out := make([]float32, batch*8192)
			forEachKernelSet(b, func(name string) {
				if name == "go" {
					return
				}
				b.Run(fmt.Sprintf("%s/b%d/%s", typ, batch, name), func(b *testing.B) {
					b.SetBytes(int64(total))
					c0 := cpuTime()
					for b.Loop() {
						for _, m := range ms {
							p.MatMul(out, m, x, batch)
						}
					}
					if d := cpuTime() - c0; d > 0 {
						b.ReportMetric(float64(total)*float64(b.N)/d.Seconds()/1e9, "GB/cpu-s")
					}
				})
			})
		}
	}
}

func rawOrRand(b testing.TB, r *rand.Rand, typ gguf.Type, rows, cols int) *Matrix {
	if _, ok := rawF16Fields[typ]; ok {
		return rawMatrix(b, r, typ, rows, cols)
	}
	// F16: random small values (Quantize of 16M floats is slow; any finite
	// halves will do for bandwidth).
	data := make([]byte, 2*rows*cols)
	for i := 0; i < len(data); i += 2 {
		binary.LittleEndian.PutUint16(data[i:], F32ToF16(float32(r.NormFloat64())*0.05))
	}
	m, err := NewMatrix(typ, rows, cols, data)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkRowKernelsInCache is one token against a 256×2048 matrix that
// stays in L2 (≤ 1 MiB), one thread, per supported kernel set: the row
// kernels' compute speed without the memory stream or the activation's
// quantization (prepared once), in weight GB/cpu-s.
func BenchmarkRowKernelsInCache(b *testing.B) {
	r := rand.New(rand.NewPCG(43, 44))
	p := NewPool(1)
	defer p.Close()
	for _, typ := range []gguf.Type{gguf.Q4_K, gguf.Q6_K, gguf.Q8_0, gguf.Q4_0, gguf.F16} {
		m := rawOrRand(b, r, typ, 256, 2048)
		for _, batch := range []int{1, 4} {
			x := randVec(r, batch*2048, 1)
			out := make([]float32, batch*256)
			forEachKernelSet(b, func(name string) {
				if name == "go" {
					return
				}
				b.Run(fmt.Sprintf("%s/b%d/%s", typ, batch, name), func(b *testing.B) {
					a := prepareActivation(m.Type, x, batch, m.Cols, p)
					defer putActivation(a)
					kern := impl.rows(m.Type, m.Cols)
					b.SetBytes(int64(len(m.Data)))
					c0 := cpuTime()
					for b.Loop() {
						kern(out, m, a, 0, m.Rows)
					}
					if d := cpuTime() - c0; d > 0 {
						b.ReportMetric(float64(len(m.Data))*float64(b.N)/d.Seconds()/1e9, "GB/cpu-s")
					}
				})
			})
		}
	}
}
