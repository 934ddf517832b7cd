package kernels

import "github.com/bulkhead-llm/bulkhead/internal/gguf"

// MatMul computes out[b*m.Rows+r] = Σ_c W[r,c]·x[b*m.Cols+c] for b in
// [0,batch), sharing rows across the pool.
//
// Each (row, token) result is bit-identical whatever the batch, the token's
// position in it, the thread count, and whether the fast or the reference
// kernel computed it (see the package comment). m must be valid (NewMatrix),
// len(x) >= batch*m.Cols and len(out) >= batch*m.Rows.
func (p *Pool) MatMul(out []float32, m *Matrix, x []float32, batch int) {
	if batch <= 0 || m.Rows == 0 {
		return
	}
	a := prepareActivation(m.Type, x, batch, m.Cols, p)
	defer putActivation(a)
	kern := gemmRows(m.Type, a, impl.rows(m.Type, m.Cols)) // prefill tiles, gemm_*.go
	out = out[:batch*m.Rows]
	// Chunks of rows small enough for dynamic load balancing and for the
	// chunk's weights to stay in cache while every token tile passes over
	// it; a prefill's gemm takes a few large items instead (gemmChunk).
	chunk := gemmChunk(a, m.Rows, m.rowBytes(), p.threads, rowChunk(m, p.threads))
	if a.batch < 4 && (m.Type == gguf.Q8_0 || rowStreams > 1 && (m.Type == gguf.Q4_K || m.Type == gguf.Q6_K)) {
		// Decode: q8pDot1 (and with two rowStreams, the K-quant rows)
		// streams a call's two halves side by side, and the farther apart
		// they are the faster memory serves them (135M Q8_0 tg256, two
		// threads: 166-176 tok/s in 32 KiB chunks, 185-195 in two chunks
		// per thread; 1B Q4_K_M on Intel: 26.3 → 27.3 tok/s; the ranged
		// split keeps each thread on its own run either way).
		chunk = max(chunk, m.Rows/(2*p.threads))
	}
	if k := rowMultiple(m.Type, a); k > 1 { // whole row tiles per chunk
		chunk = (chunk + k - 1) / k * k
	}
	n := (m.Rows + chunk - 1) / chunk
	if p.threads == 1 || n == 1 {
		kern(out, m, a, 0, m.Rows)
		return
	}
	p.mu.Lock()
	p.mm = mmJob{out: out, m: m, a: a, kern: kern, chunk: chunk}
	if n <= maxRanged && rangedMatMul {
		p.publish(n, p.mmFn, true)
	} else {
		p.parallelLocked(n, p.mmFn)
	}
	p.mm = mmJob{}
	p.mu.Unlock()
}

// rangedMatMul is false only in BenchmarkDecodeSplit, which compares the
// ranged split with chunks handed out in turn.
var rangedMatMul = true

// mmJob is one MatMul's operands, kept in the pool so its work items need
// no per-call closure.
type mmJob struct {
	out   []float32
	m     *Matrix
	a     *activation
	kern  rowKernel
	chunk int
}

func (j *mmJob) item(i int) {
	j.kern(j.out, j.m, j.a, i*j.chunk, min(j.m.Rows, (i+1)*j.chunk))
}

// rowChunk picks the rows per work item: about 32 KiB of weights, at least
// four items per thread when the matrix allows.
func rowChunk(m *Matrix, threads int) int {
	rb := max(1, m.rowBytes())
	c := max(1, (32<<10)/rb)
	if per := m.Rows / (4 * threads); per >= 1 {
		c = min(c, per)
	}
	return max(1, c)
}

// MatMulRef is MatMul computed by the pure-Go reference on the calling
// goroutine.
func MatMulRef(out []float32, m *Matrix, x []float32, batch int) {
	if batch <= 0 || m.Rows == 0 {
		return
	}
	a := prepareActivation(m.Type, x, batch, m.Cols, nil)
	defer putActivation(a)
	rowsRef(out[:batch*m.Rows], m, a, 0, m.Rows)
}
