package copymodel

import "math"

// Shape of the model. The residual stream is cut into subspaces: the
// current token's code, the previous token's code (written by layer 1), the
// copied token's code (written by layer 2) and one constant dimension.
const (
	embd     = 512
	nHeads   = 4
	headDim  = 128
	nLayers  = 2
	ffnWidth = 32 // all-zero feed-forward: a Llama block needs one
	codeDim  = 128
	slots    = codeDim / 2 // code slots, each one 2-D unit-phase vector

	tokenOff = 0   // T: code of the current token
	prevOff  = 128 // P: code of the previous token
	copyOff  = 256 // O: code of the token the induction head found
	constDim = 384 // constant 1 (before scaling), so position-only queries survive RMSNorm

	ropeBase = 500000
	normEps  = 1e-5

	// embedScale makes an embedding's RMS exactly 1 (a code has norm 1):
	// 16²·(|code|² + 1) = 512 = embd, so attn_norm of layer 1 is the identity.
	embedScale = 16

	// Layer 1: pairs rotating at least this fast per position take part in
	// the previous-token score, and every offset other than "one back"
	// scores at least prevGap logits below it.
	prevMinTheta = 0.03
	prevGap      = 32

	// Layer 2: a rotary pair carries the match signal only if it turns by
	// at most matchMaxAngle over matchSpan positions, so a match scores
	// nearly the same at any distance. Each head owns slotsPerHead code
	// slots and can fit at most that many slow pairs.
	matchSpan     = 32768
	matchMaxAngle = 0.94
	slotsPerHead  = slots / nHeads
	// matchScore is the attention logit of a true match at distance 0.
	matchScore = 40

	// lmScale is the LM head's weight on the copied code.
	lmScale = 50
)

// ropeFreq is the rotation per position of pair i in llama.cpp's normal
// RoPE mode: base^(-2i/head_dim).
func ropeFreq(i int) float64 { return math.Pow(ropeBase, -2*float64(i)/headDim) }

// tokenCodes gives every token a code of 64 slots: slot s holds
// √(2/128)·(cos φ, sin φ) with a pseudo-random phase φ, so every code has
// norm 1, a code matches itself in every slot alike, and two different
// codes agree only by chance (dot product ≈ N(0, 1/128)).
func tokenCodes(n int) [][]float32 {
	rng := splitMix(0x5eed_c0de_b01c_4ead)
	amp := math.Sqrt(2.0 / codeDim)
	codes := make([][]float32, n)
	for t := range codes {
		c := make([]float32, codeDim)
		for s := 0; s < slots; s++ {
			sin, cos := math.Sincos(2 * math.Pi * rng.float())
			c[2*s] = float32(amp * cos)
			c[2*s+1] = float32(amp * sin)
		}
		codes[t] = c
	}
	return codes
}

// splitMix is SplitMix64: a tiny generator fixed here so the model's bytes
// never change with the Go version.
type splitMix uint64

func (s *splitMix) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// float returns a uniform number in [0, 1).
func (s *splitMix) float() float64 { return float64(s.next()>>11) / (1 << 53) }

// matrix is a dense row-major weight: rows outputs of cols inputs, y = W·x.
type matrix struct {
	rows, cols int
	w          []float32
}

func newMatrix(rows, cols int) *matrix {
	return &matrix{rows: rows, cols: cols, w: make([]float32, rows*cols)}
}

func (m *matrix) set(row, col int, v float64) { m.w[row*m.cols+col] = float32(v) }

// layer holds one block's attention weights; its norms are all ones and its
// feed-forward all zeros.
type layer struct{ q, k, v, o *matrix }

func newLayer() layer {
	return layer{newMatrix(embd, embd), newMatrix(embd, embd), newMatrix(embd, embd), newMatrix(embd, embd)}
}

// weights is the whole constructed model in float32.
type weights struct {
	embed  *matrix // vocab rows of embd
	layers [nLayers]layer
	output *matrix // vocab rows of embd
}

// construct builds the weights for a vocabulary and a maximum context.
func construct(v *vocab, context int) *weights {
	codes := tokenCodes(len(v.pieces))
	w := &weights{embed: newMatrix(len(v.pieces), embd), output: newMatrix(len(v.pieces), embd)}
	for t, c := range codes {
		for j, x := range c {
			w.embed.set(t, tokenOff+j, embedScale*float64(x))
			if v.copyable(t) {
				w.output.set(t, copyOff+j, lmScale*float64(x))
			}
		}
		w.embed.set(t, constDim, embedScale)
	}
	w.layers[0] = previousTokenLayer(context)
	w.layers[1] = inductionLayer()
	return w
}

// previousTokenLayer builds layer 1. Head 0's query and key read only the
// constant dimension, so its score depends only on the offset n-m between
// key and query positions. In each fast pair i (θ_i = freq ≥ prevMinTheta)
// the key is a_i·(1, 0) and the query the same vector turned back by one
// position; after RoPE their product is a_i²·cos((n-m+1)θ_i), which peaks at
// n = m-1 for every pair at once. The weight a_i² = 1-cos θ_i favours the
// pairs that best tell offset 1 from offset 0. The head copies the token
// code T of the attended position into P. Heads 1–3 are zero.
func previousTokenLayer(context int) layer {
	l := newLayer()
	var pairs []int
	for i := 0; i < headDim/2; i++ {
		if ropeFreq(i) >= prevMinTheta {
			pairs = append(pairs, i)
		}
	}
	// Gap between the peak and offset n-m = k-1 is s²/√d·Σ a_i²(1-cos kθ_i);
	// choose s for the smallest gap over every offset the context allows.
	minGap := math.Inf(1)
	for k := 1; k >= 2-context; k-- {
		if k == 0 {
			continue
		}
		g := 0.0
		for _, i := range pairs {
			th := ropeFreq(i)
			g += (1 - math.Cos(th)) * (1 - math.Cos(float64(k)*th))
		}
		minGap = min(minGap, g)
	}
	s := math.Sqrt(prevGap * math.Sqrt(headDim) / minGap)
	for _, i := range pairs {
		th := ropeFreq(i)
		a := s * math.Sqrt(1-math.Cos(th)) / embedScale
		l.k.set(2*i, constDim, a)
		l.q.set(2*i, constDim, a*math.Cos(th))
		l.q.set(2*i+1, constDim, -a*math.Sin(th))
	}
	for j := 0; j < codeDim; j++ {
		l.v.set(j, tokenOff+j, 1)
		l.o.set(prevOff+j, j, 1)
	}
	return l
}

// inductionLayer builds layer 2. Head h compares the current token's code
// (query, from T) with the previous-token code (key, from P) on its own
// block of code slots, each slot placed in one slow rotary pair so RoPE
// barely changes the score with distance: a position whose previous token
// equals the current token scores ≈ matchScore, any other ≈ N(0, (matchScore/5)²).
// Every head copies the whole token code T of the position it attends to
// into O, so the heads vote.
func inductionLayer() layer {
	l := newLayer()
	var pairs []int // slow pairs, slowest last
	for i := 0; i < headDim/2; i++ {
		if ropeFreq(i)*matchSpan <= matchMaxAngle {
			pairs = append(pairs, i)
		}
	}
	if len(pairs) > slotsPerHead {
		pairs = pairs[len(pairs)-slotsPerHead:]
	}
	// After attn_norm the residual (T, P and the constant, each of norm 16)
	// has RMS √(3·256/512), so a code arrives scaled by 16/√1.5.
	codeIn := embedScale / math.Sqrt(1.5)
	perSlot := codeIn * codeIn * 2 / codeDim / math.Sqrt(headDim)
	a := math.Sqrt(matchScore / (perSlot * float64(len(pairs))))
	for h := 0; h < nHeads; h++ {
		for j, p := range pairs {
			s := h*slotsPerHead + j
			for d := 0; d < 2; d++ {
				l.q.set(h*headDim+2*p+d, tokenOff+2*s+d, a)
				l.k.set(h*headDim+2*p+d, prevOff+2*s+d, a)
			}
		}
		for j := 0; j < codeDim; j++ {
			l.v.set(h*headDim+j, tokenOff+j, 1)
			l.o.set(copyOff+j, h*headDim+j, 1)
		}
	}
	return l
}
