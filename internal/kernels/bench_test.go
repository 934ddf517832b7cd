package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// benchShapes are SmolLM2-135M's matrices (rows×cols): attention
// projections, FFN up/gate, FFN down, and the tied output embedding.
var benchShapes = [][2]int{{576, 576}, {1536, 576}, {576, 1536}, {49152, 576}}

// BenchmarkMatMul reports weight bandwidth (MB/s of weights per op) and
// tokens/s for the fast path on 2 threads and, where it finishes in
// reasonable time, the single-threaded reference. K-quant shapes round the
// column count up to a multiple of 256 (576 → 768).
func BenchmarkMatMul(b *testing.B) {
	types := []gguf.Type{gguf.Q8_0, gguf.F16, gguf.Q4_0, gguf.Q4_K, gguf.Q6_K, gguf.F32, gguf.BF16}
	r := rand.New(rand.NewPCG(7, 8))
	p := NewPool(2)
	defer p.Close()
	for _, typ := range types {
		for _, sh := range benchShapes {
			rows, cols := sh[0], sh[1]
			if be := typ.BlockElems(); cols%be != 0 {
				cols = (cols + be - 1) / be * be
			}
			b.Run(fmt.Sprintf("%s/%dx%d", typ, rows, cols), func(b *testing.B) {
				m := randMatrix(b, r, typ, rows, cols)
				for _, batch := range []int{1, 512} {
					x := randVec(r, batch*cols, 1)
					out := make([]float32, batch*rows)
					run := func(b *testing.B, f func()) {
						b.SetBytes(int64(len(m.Data)))
						c0 := cpuTime()
						for b.Loop() {
							f()
						}
						b.ReportMetric(float64(batch)*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
						reportCPU(b, c0, float64(batch)*float64(b.N))
					}
					b.Run(fmt.Sprintf("batch%d/fast", batch), func(b *testing.B) {
						run(b, func() { p.MatMul(out, m, x, batch) })
					})
					if batch == 1 {
						b.Run(fmt.Sprintf("batch%d/ref", batch), func(b *testing.B) {
							run(b, func() { MatMulRef(out, m, x, batch) })
						})
					}
				}
			})
		}
	}
}

// BenchmarkVectorOps compares the attention-side vector operations, fast
// (public entry points) against the reference, at head dimension 64 and a
// 4096-element row.
func BenchmarkVectorOps(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, n := range []int{64, 4096} {
		x, y := randVec(r, n, 1), randVec(r, n, 1)
		h := make([]uint16, n)
		F32ToF16Slice(h, x)
		var sink float32
		cases := []struct {
			name      string
			fast, ref func()
		}{
			{"Dot", func() { sink += Dot(x, y) }, func() { sink += dotRef(x, y) }},
			{"DotF16", func() { sink += DotF16(h, y) }, func() { sink += dotF16Ref(h, y) }},
			{"Axpy", func() { Axpy(y, 1e-3, x) }, func() { axpyRef(y, 1e-3, x) }},
			{"AxpyF16", func() { AxpyF16(y, 1e-3, h) }, func() { axpyF16Ref(y, 1e-3, h) }},
			{"F32ToF16Slice", func() { F32ToF16Slice(h, x) }, func() { f32ToF16SliceRef(h, x) }},
			{"Softmax", func() { copy(y, x); Softmax(y) }, func() { copy(y, x); softmaxRef(y) }},
			{"SwiGLU", func() { SwiGLU(y, x, x) }, func() { swigluRef(y, x, x) }},
		}
		for _, c := range cases {
			for _, impl := range []struct {
				name string
				f    func()
			}{{"fast", c.fast}, {"ref", c.ref}} {
				b.Run(fmt.Sprintf("%s/n%d/%s", c.name, n, impl.name), func(b *testing.B) {
					b.SetBytes(int64(4 * n))
					for b.Loop() {
						impl.f()
					}
				})
			}
		}
		_ = sink
	}
}

// BenchmarkPoolDecodeStep runs the matrix products of one decode step of
// a small model (7 products) and reports allocations per step, the figure
// the pool must keep at zero.
func BenchmarkPoolDecodeStep(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	p := NewPool(2)
	defer p.Close()
	for _, typ := range []gguf.Type{gguf.Q8_0, gguf.Q4_K, gguf.F16} {
		b.Run(typ.String(), func(b *testing.B) {
			m := randMatrix(b, r, typ, 768, 768)
			x := randVec(r, 768, 1)
			out := make([]float32, 768)
			b.ReportAllocs()
			for b.Loop() {
				for k := 0; k < 7; k++ {
					p.MatMul(out, m, x, 1)
				}
			}
		})
	}
}

// BenchmarkDecode1B is one token through matrices of the Llama-3.2-1B
// shape (2048 → 2048, 2048 → 8192, 8192 → 2048), one thread, reporting
// weight bandwidth, for each decode weight type.
func BenchmarkDecode1B(b *testing.B) {
	r := rand.New(rand.NewPCG(11, 12))
	p := NewPool(1)
	defer p.Close()
	for _, typ := range []gguf.Type{gguf.Q4_K, gguf.Q6_K, gguf.Q8_0, gguf.F16} {
		for _, sh := range [][2]int{{8192, 2048}, {2048, 8192}, {65536, 2048}} {
			m := randMatrix(b, r, typ, sh[0], sh[1])
			for _, batch := range []int{1, 4, 16} {
				b.Run(fmt.Sprintf("%s/%dx%d/b%d", typ, sh[0], sh[1], batch), func(b *testing.B) {
					x := randVec(r, batch*sh[1], 1)
					out := make([]float32, batch*sh[0])
					b.SetBytes(int64(len(m.Data)))
					for b.Loop() {
						p.MatMul(out, m, x, batch)
					}
				})
			}
		}
	}
}

// BenchmarkDecodeSplit is one token through the Llama-1B layer mix of
// products of one type at a time (Q8_0, Q4_K, Q6_K, F16; cycled over ≥
// 512 MB, beyond the last-level cache of most hosts) on two threads, MatMul's ranged split against
// chunks handed out in turn. The two alternate pass by pass and each
// reports its best pass as a fraction of the best read probe taken between
// passes ("of-probe"): on a shared host the neighbours' traffic comes in
// bursts, and the best of many short passes is what the code can do.
func BenchmarkDecodeSplit(b *testing.B) {
	r := rand.New(rand.NewPCG(51, 52))
	p := NewPool(2)
	defer p.Close()
	probe := make([]byte, 512<<20)
	for _, typ := range []gguf.Type{gguf.Q8_0, gguf.Q4_K, gguf.Q6_K, gguf.F16} {
		var ms []*Matrix
		total := 0
		for total < 512<<20 {
			for _, sh := range [][2]int{{2048, 2048}, {512, 2048}, {512, 2048}, {2048, 2048}, {8192, 2048}, {8192, 2048}, {2048, 8192}} {
				m := rawOrRand(b, r, typ, sh[0], sh[1])
				ms = append(ms, m)
				total += len(m.Data)
			}
		}
		x := randVec(r, 8192, 1)
		out := make([]float32, 8192)
		b.Run(typ.String(), func(b *testing.B) {
			defer func() { rangedMatMul = true }()
			best := map[bool]time.Duration{}
			bestProbe := 0.0
			for b.Loop() {
				for _, ranged := range []bool{true, false} {
					rangedMatMul = ranged
					t0 := time.Now()
					for _, m := range ms {
						p.MatMul(out, m, x, 1)
					}
					if el := time.Since(t0); best[ranged] == 0 || el < best[ranged] {
						best[ranged] = el
					}
				}
				bestProbe = max(bestProbe, ReadBandwidth(p, probe, 1))
			}
			for ranged, name := range map[bool]string{true: "ranged", false: "chunked"} {
				bw := float64(total) / best[ranged].Seconds()
				b.ReportMetric(bw/1e9, name+"-GB/s")
				b.ReportMetric(bw/bestProbe, name+"-of-probe")
			}
			b.ReportMetric(bestProbe/1e9, "probe-GB/s")
		})
	}
}

// BenchmarkDecodeStep1B is one decode token through every product of the
// Llama-3.2-1B shape as llama.cpp's Q4_K_M writes it (Q4_K, with Q6_K for
// half the layers' attn_v and ffn_down and for the 32000-row output), 608
// MB on two threads. Each pass is followed by the read probe over as many
// bytes and by "stream", a pass that runs MatMul's ranged split over the
// same matrices with a plain read for a kernel: the fixed cost of the
// products' dispatch without their arithmetic. Ratios are of the mean
// rates over all passes (each pass next to its own probe), the figure the
// model's decode sees on a shared host.
func BenchmarkDecodeStep1B(b *testing.B) {
	r := rand.New(rand.NewPCG(61, 62))
	p := NewPool(2)
	defer p.Close()
	var ms []*Matrix
	total := 0
	add := func(typ gguf.Type, rows, cols int) {
		m := rawOrRand(b, r, typ, rows, cols)
		ms = append(ms, m)
		total += len(m.Data)
	}
	for l := 0; l < 16; l++ {
		mixed := gguf.Q4_K
		if l%2 == 0 {
			mixed = gguf.Q6_K
		}
		add(gguf.Q4_K, 2048, 2048) // attn_q
		add(gguf.Q4_K, 512, 2048)  // attn_k
		add(mixed, 512, 2048)      // attn_v
		add(gguf.Q4_K, 2048, 2048) // attn_output
		add(gguf.Q4_K, 8192, 2048) // ffn_gate
		add(gguf.Q4_K, 8192, 2048) // ffn_up
		add(mixed, 2048, 8192)     // ffn_down
	}
	add(gguf.Q6_K, 32000, 2048) // output
	x := randVec(r, 8192, 1)
	out := make([]float32, 32000)
	probe := make([]byte, total)
	ReadBandwidth(p, probe, 1)
	stream := func(m *Matrix) {
		chunk := rowChunk(m, p.threads)
		rb := m.rowBytes()
		n := (m.Rows + chunk - 1) / chunk
		p.mu.Lock()
		p.publish(n, func(i int) {
			r0, r1 := i*chunk, min(m.Rows, (i+1)*chunk)
			probeSink.Add(probeRead(m.Data[r0*rb : r1*rb]))
		}, true)
		p.mu.Unlock()
	}
	var tStep, tStream, tProbe float64
	for b.Loop() {
		t0 := time.Now()
		for _, m := range ms {
			p.MatMul(out, m, x, 1)
		}
		tStep += time.Since(t0).Seconds()
		t0 = time.Now()
		for _, m := range ms {
			stream(m)
		}
		tStream += time.Since(t0).Seconds()
		tProbe += float64(total) / ReadMappedBandwidth(p, probe, 1)
	}
	b.ReportMetric(float64(total)*float64(b.N)/tStep/1e9, "GB/s")
	b.ReportMetric(tProbe/tStep, "of-probe")
	b.ReportMetric(tProbe/tStream, "stream-of-probe")
}
