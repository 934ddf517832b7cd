package kernels

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// smolLM2 is the matrix inventory of SmolLM2-135M: per layer q, k, v, o,
// gate, up, down (n_embd 576, 3 KV heads × 64, n_ff 1536), 30 layers, and the
// 49152×576 output matrix.
var smolLM2Layer = [][2]int{{576, 576}, {192, 576}, {192, 576}, {576, 576}, {1536, 576}, {1536, 576}, {576, 1536}}

// fastRandMatrix fills a matrix with random blocks directly (quantizing
// 135M random floats would dominate the benchmark's setup).
func fastRandMatrix(r *rand.Rand, typ gguf.Type, rows, cols int) *Matrix {
	rb, _ := typ.RowBytes(cols)
	data := make([]byte, rows*rb)
	for i := 0; i+8 <= len(data); i += 8 {
		binary.LittleEndian.PutUint64(data[i:], r.Uint64())
	}
	switch typ {
	case gguf.Q8_0:
		for b := 0; b < len(data); b += 34 {
			binary.LittleEndian.PutUint16(data[b:], F32ToF16(0.01))
		}
	case gguf.F16:
		for i := 0; i < len(data); i += 2 {
			data[i+1] &= 0xbb // magnitudes below 1
		}
	}
	m, err := NewMatrix(typ, rows, cols, data)
	if err != nil {
		panic(err)
	}
	return m
}

// BenchmarkModelMatMuls runs every weight matrix product of one SmolLM2-135M
// forward pass on 2 threads: decode (1 token) and a 512-token prefill (the
// output matrix for the last token only). tok/s is the matmul-only ceiling
// for the whole model; MB/s counts the weights read per pass.
func BenchmarkModelMatMuls(b *testing.B) {
	r := rand.New(rand.NewPCG(17, 17))
	p := NewPool(2)
	defer p.Close()
	for _, typ := range []gguf.Type{gguf.Q8_0, gguf.F16} {
		b.Run(typ.String(), func(b *testing.B) {
			var layers [][]*Matrix
			var bytes int64
			for l := 0; l < 30; l++ {
				var ms []*Matrix
				for _, sh := range smolLM2Layer {
					m := fastRandMatrix(r, typ, sh[0], sh[1])
					bytes += int64(len(m.Data))
					ms = append(ms, m)
				}
				layers = append(layers, ms)
			}
			output := fastRandMatrix(r, typ, 49152, 576)
			bytes += int64(len(output.Data))
			for _, batch := range []int{1, 512} {
				x := randVec(r, batch*1536, 1)
				out := make([]float32, batch*49152)
				b.Run(map[int]string{1: "decode", 512: "prefill512"}[batch], func(b *testing.B) {
					b.SetBytes(bytes)
					c0 := cpuTime()
					for b.Loop() {
						for _, ms := range layers {
							for _, m := range ms {
								p.MatMul(out, m, x, batch)
							}
						}
						p.MatMul(out, output, x, 1)
					}
					b.ReportMetric(float64(batch)*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
					reportCPU(b, c0, float64(batch)*float64(b.N))
				})
			}
		})
	}
}

// BenchmarkStreamBaseline reads 256 MiB with the pool's two threads doing
// nothing but loads (Dot of a buffer with itself, in 1 MiB pieces): the
// memory bandwidth the decode figures above should be compared with on
// this (shared) machine.
func BenchmarkStreamBaseline(b *testing.B) {
	const n = 64 << 20 // float32s
	buf := make([]float32, n)
	for i := range buf {
		buf[i] = 1
	}
	p := NewPool(2)
	defer p.Close()
	const piece = 1 << 18
	var sink [n / piece]float32
	b.SetBytes(4 * n)
	for b.Loop() {
		p.Parallel(n/piece, func(i int) {
			s := buf[i*piece : (i+1)*piece]
			sink[i] = Dot(s, s)
		})
	}
}
