//go:build amd64 && !noasm

package kernels

// packsQ8: this build's Q8_0 row kernels read the packed copy (q8pack.go).
const packsQ8 = true

//go:noescape
func q8pDot4(w *byte, groups, nb int, xq *int8, cols int, xd *float32, out *float32, rows int)

//go:noescape
func q8pDot4Z(w *byte, pairs, nb int, xq *int8, cols int, xd *float32, xs *int32, out *float32, rows int)

//go:noescape
func q8BlockSumsAVX(q *int8, out *int32, nb int)

// q8BlockSums sets out[i] = −128 × Σ q[32i..32i+31] (q8pDot4Z's start).
func q8BlockSums(q []int8, out []int32) {
	if len(out) > 0 {
		q8BlockSumsAVX(&q[0], &out[0], len(out))
	}
}

// wantsQ8Sums reports whether prepareActivation computes a Q8_0
// activation's block sums (activation.xs) for q8pDot4Z: under the AVX-512
// set, which runs it for four tokens at a time.
func wantsQ8Sums() bool { return using512() }

//go:noescape
func q8pDot1(w *byte, groups, nb int, xq *int8, xd *float32, out *float32)

// rowsQ8P computes Q8_0 rows [r0,r1) from the packed groups: runs of whole
// groups go to the kernels in one call per four tokens (then per token);
// a group the range cuts (the matrix's last, when rows is not a multiple
// of eight, or a range MatMul did not align) is computed whole into a
// scratch tile and its rows in range copied out.
func rowsQ8P(out []float32, m *Matrix, a *activation, r0, r1 int) {
	if m.q8p == nil || r1 <= r0 {
		rowsRef(out, m, a, r0, r1)
		return
	}
	if r0%8 != 0 { // the head of a cut group
		hi := min(r1, r0/8*8+8)
		q8pPartial(out, m, a, r0/8, r0, hi)
		r0 = hi
	}
	if g0, g1 := r0/8, r1/8; g1 > g0 {
		q8pGroups(out, m, a, g0, g1)
		r0 = 8 * g1
	}
	if r0 < r1 { // the tail of a cut group
		q8pPartial(out, m, a, r0/8, r0, r1)
	}
}

// q8pGroups computes groups [g0, g1) for every token.
func q8pGroups(out []float32, m *Matrix, a *activation, g0, g1 int) {
	nb := a.cols / 32
	w := &m.q8p[g0*nb*q8pBlock]
	b := 0
	pairs := 0
	if len(a.xs) == a.batch*nb { // prepareActivation made them for q8pDot4Z
		pairs = (g1 - g0) / 2 // q8pDot4Z takes two groups per pass
	}
	for ; b+4 <= a.batch; b += 4 {
		if pairs > 0 {
			q8pDot4Z(w, pairs, nb, &a.qs[b*a.cols], a.cols, &a.d[b*nb], &a.xs[b*nb], &out[b*m.Rows+8*g0], m.Rows)
		}
		if g := g0 + 2*pairs; g < g1 {
			q8pDot4(&m.q8p[g*nb*q8pBlock], g1-g, nb, &a.qs[b*a.cols], a.cols, &a.d[b*nb], &out[b*m.Rows+8*g], m.Rows)
		}
	}
	for ; b < a.batch; b++ {
		q8pDot1(w, g1-g0, nb, &a.qs[b*a.cols], &a.d[b*nb], &out[b*m.Rows+8*g0])
	}
}

// q8pPartial computes rows [lo, hi) of group g through a scratch tile.
func q8pPartial(out []float32, m *Matrix, a *activation, g, lo, hi int) {
	nb := a.cols / 32
	w := &m.q8p[g*nb*q8pBlock]
	var tmp [4 * 8]float32
	for b := 0; b < a.batch; {
		n := 1
		if b+4 <= a.batch {
			n = 4
			q8pDot4(w, 1, nb, &a.qs[b*a.cols], a.cols, &a.d[b*nb], &tmp[0], 8)
		} else {
			q8pDot1(w, 1, nb, &a.qs[b*a.cols], &a.d[b*nb], &tmp[0])
		}
		for t := 0; t < n; t++ {
			copy(out[(b+t)*m.Rows+lo:(b+t)*m.Rows+hi], tmp[8*t+lo-8*g:8*t+hi-8*g])
		}
		b += n
	}
}

// ggmlQ8Rows is MatMulGGMLQ8's row kernel: rowsQ8's eight-lane tiles
// (q8Dot1/4/8, q8DotRows), bit-equal to dotQ32Ref.
func ggmlQ8Rows(out []float32, m *Matrix, a *activation, r0, r1 int) {
	if impl.name == refKernels.name {
		ggmlQ8RowsRef(out, m, a, r0, r1)
		return
	}
	rowsQ8(out, m, a, r0, r1)
}
