package model

// scratch holds the buffers of one forward step. They only grow, so a
// steady stream of steps of similar size allocates nothing.
type scratch struct {
	x, xn, q, k, v, att, proj []float32 // token-major activations
	gate, up, hidden          []float32
	ropeCS                    []float32 // cos/sin pairs per token
	ropeCSLocal               []float32 // the same for sliding-window layers (gemma3)
	pos                       []int     // position of each stacked token
	outRows                   []int     // stacked indices of tokens that need logits
	xOut, logits              []float32
	result                    [][]float32
	groups                    []attnGroup
	tasks                     []attnTask
	kv16                      []uint16  // gathered keys and values, F16 KV
	keysT                     bool      // F16 keys gathered transposed, for kernels.ScoresF16
	kv32                      []float32 // gathered keys and values, F32 KV
	attnBuf                   []float32 // per-task queries, scores, probabilities, outputs
	vt16                      []uint16  // per-task shortened Vᵀ copies, F16 KV
	vt32                      []float32 // per-task shortened Vᵀ copies, F32 KV
	layer                     int       // the layer, store and batch attend is working on
	kv                        KVStore
	seqs                      []Seq
}

// grow returns buf resized to n, reallocating only when it is too small.
func grow[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n, n+n/4)
	}
	return buf[:n]
}

// size sizes the activation buffers for tokens stacked tokens.
func (s *scratch) size(c *Config, tokens int) {
	s.x = grow(s.x, tokens*c.Embd)
	s.xn = grow(s.xn, tokens*c.Embd)
	s.proj = grow(s.proj, tokens*c.Embd)
	s.q = grow(s.q, tokens*c.QDim())
	s.att = grow(s.att, tokens*c.QDim())
	s.k = grow(s.k, tokens*c.KVDim())
	s.v = grow(s.v, tokens*c.KVDim())
	s.gate = grow(s.gate, tokens*c.FF)
	s.up = grow(s.up, tokens*c.FF)
	s.hidden = grow(s.hidden, tokens*c.FF)
	s.ropeCS = grow(s.ropeCS, tokens*c.RopeDim)
	s.ropeCSLocal = grow(s.ropeCSLocal, tokens*c.RopeDim)
	s.pos = grow(s.pos, tokens)
}
