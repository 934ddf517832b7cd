package model

import (
	"unsafe"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kernels"
)

// Attention runs as two small matrix products per (sequence, head), on the
// kernels' matmul instead of one dot product per (query, key):
//
//	scores = K · q        K: the sequence's keys of one KV head, one row per position
//	out    = Vᵀ · p       Vᵀ: its values transposed, one row per head dimension
//
// The matmul fixes the reduction order of each (row, token) result, so a
// score is the same bits whatever the number of queries or keys in the
// product. Vᵀ's rows are padded with zeros to a multiple of eight
// positions, and probabilities past a query's own position are zero: the
// kernels' eight-lane sum then assigns position j to lane j mod 8 however
// long the row is, and adding exact zeros changes no bit, so a query's
// output does not depend on the chunk it ran in either.

// queryBlock is how many queries of one (sequence, head) one attention
// task handles, so a long prefill spreads over the threads.
const queryBlock = 32

// attnBudget bounds the gathered keys, values and per-task buffers of one
// pass (bytes); a larger batch is attended in several passes. A variable
// so tests can force many passes.
var attnBudget = 64 << 20

// transposedKeys lets F16 keys be gathered transposed for
// kernels.ScoresF16 where its kernel runs (faster than MatMul over keys
// row by row, and bit-equal to it); a variable so a test can compare.
var transposedKeys = true

// multiQuery reports whether some sequence brings more than one query:
// only then are the keys transposed. One query per head converts each
// key once per product either way, and there MatMul's rows were the
// faster (BenchmarkScoresF16/q1: 49 against 45 GFLOP/s).
func multiQuery(seqs []Seq) bool {
	for i := range seqs {
		if len(seqs[i].Tokens) > 1 {
			return true
		}
	}
	return false
}

// windowedGather lets a sliding-window layer skip the pages before its
// window; a variable so a test can compare against reading every page.
var windowedGather = true

// attnGroup is one (sequence, KV head): its keys gathered row by row (or,
// F16 with kernels.ScoresF16Fast, transposed: row per dimension, pad
// wide) and its values transposed, for positions [0, n).
type attnGroup struct {
	seq, kvHead int
	n, pad      int // positions, and n rounded up to a multiple of 8
	k16, v16    []uint16
	k32, v32    []float32
	vmat        kernels.Matrix
	// tasks are the indices [t0, t1) of the group's tasks when they are
	// contiguous, which they are when every query of the pass fits one
	// block (decode steps); see fuseAttention.
	t0, t1 int
}

// attnTask is the attention of queries [q0, q1) of one sequence and one
// head. first is the stacked index of the sequence's first new token.
type attnTask struct {
	group, head, q0, q1, first int
	rows                       int       // keys the block's last query sees
	qx, scores, probs, out     []float32 // scores nil with transposed keys (they score into probs)
	kmat                       kernels.Matrix
	// vmat is the group's Vᵀ, or for an early query block of a long chunk
	// a copy of its first vcols columns (vt16 or vt32), which is all the
	// block's queries see: the copy costs 1/queryBlock of the product it
	// shortens.
	vmat  kernels.Matrix
	vcols int
	vt16  []uint16
	vt32  []float32
}

// attend computes s.att for every stacked token of layer li, in passes
// over groups of sequences that fit attnBudget.
func (m *Model) attend(li int, kv KVStore, seqs []Seq) {
	total := 0
	for i := range seqs {
		total += len(seqs[i].Tokens)
	}
	if m.useGGMLAttention(kv, total) {
		m.attendGGML(li, kv, seqs)
		return
	}
	first := 0
	for start := 0; start < len(seqs); {
		end, tokens, need := start, 0, 0
		for end < len(seqs) && (end == start || need+m.attnBytes(&seqs[end]) <= attnBudget) {
			need += m.attnBytes(&seqs[end])
			tokens += len(seqs[end].Tokens)
			end++
		}
		m.planAttention(kv, seqs[start:end], start, first)
		m.s.layer, m.s.kv, m.s.seqs = li, kv, seqs
		if m.fuseAttention(seqs[start:end]) {
			m.pool.Parallel(len(m.s.groups), m.gatherAttendFn)
		} else {
			m.pool.Parallel(len(m.s.groups), m.gatherFn)
			m.pool.Parallel(len(m.s.tasks), m.attendFn)
		}
		m.s.kv, m.s.seqs = nil, nil
		first += tokens
		start = end
	}
}

// fuseAttention says whether a pass runs each group's gather and its
// heads' tasks as one work item instead of two rounds over the pool. It
// does when every sequence's queries fit one block (so a group's tasks are
// contiguous, t0..t1) and there are groups enough to keep every thread
// busy: a 16-sequence decode step then attends each group while its
// gathered keys and values are still in cache, with one barrier per layer
// instead of two. Which thread computes what does not change any result.
func (m *Model) fuseAttention(seqs []Seq) bool {
	if len(m.s.groups) < 4*m.pool.Threads() {
		return false
	}
	for i := range seqs {
		if len(seqs[i].Tokens) > queryBlock {
			return false
		}
	}
	return true
}

// attnBytes estimates the scratch one sequence needs in an attention pass.
func (m *Model) attnBytes(sq *Seq) int {
	c := &m.Config
	n := sq.Pos + len(sq.Tokens)
	pad := (n + 7) &^ 7
	kvElems := c.KVHeads * c.HeadDim * 2 * pad * 4
	taskElems := c.Heads * len(sq.Tokens) * (2*c.HeadDim + n + pad) * 4
	blocks := (len(sq.Tokens) + queryBlock - 1) / queryBlock
	vtElems := c.Heads * (blocks - 1) * c.HeadDim * pad * 4
	return kvElems + taskElems + vtElems
}

// planAttention lays out the groups and tasks of seqs (whose first is
// seqs[0]'s index in the step, and first its first stacked token) over the
// scratch buffers.
func (m *Model) planAttention(kv KVStore, seqs []Seq, seqBase, first int) {
	c := &m.Config
	s := &m.s
	hd := c.HeadDim
	f16 := kv.DType() == gguf.F16
	s.groups, s.tasks = s.groups[:0], s.tasks[:0]
	kvNeed, taskNeed, vtNeed := 0, 0, 0
	s.keysT = f16 && transposedKeys && kernels.ScoresF16Fast() && multiQuery(seqs)
	for si, sq := range seqs {
		n := sq.Pos + len(sq.Tokens)
		pad := (n + 7) &^ 7
		for g := 0; g < c.KVHeads; g++ {
			s.groups = append(s.groups, attnGroup{seq: seqBase + si, kvHead: g, n: n, pad: pad})
			kvNeed += hd * 2 * pad // keys row by row need n ≤ pad rows
		}
		gpk := c.Heads / c.KVHeads
		for h := 0; h < c.Heads; h++ {
			group := len(s.groups) - c.KVHeads + h/gpk
			if h%gpk == 0 {
				s.groups[group].t0 = len(s.tasks)
			}
			for q0 := 0; q0 < len(sq.Tokens); q0 += queryBlock {
				q1 := min(q0+queryBlock, len(sq.Tokens))
				s.tasks = append(s.tasks, attnTask{group: group, head: h, q0: q0, q1: q1, first: first})
				vcols := (sq.Pos + q1 + 7) &^ 7
				scores := sq.Pos + q1 // transposed keys score into the probabilities
				if s.keysT {
					scores = 0
				}
				taskNeed += (q1 - q0) * (2*hd + scores + vcols)
				if vcols < pad {
					vtNeed += hd * vcols
				}
			}
			s.groups[group].t1 = len(s.tasks)
		}
		first += len(sq.Tokens)
	}
	if f16 {
		s.kv16 = grow(s.kv16, kvNeed)
	} else {
		s.kv32 = grow(s.kv32, kvNeed)
	}
	s.attnBuf = grow(s.attnBuf, taskNeed)
	if f16 {
		s.vt16 = grow(s.vt16, vtNeed)
	} else {
		s.vt32 = grow(s.vt32, vtNeed)
	}
	off := 0
	for i := range s.groups {
		g := &s.groups[i]
		kn, vn := g.n*hd, g.pad*hd
		if s.keysT {
			kn = g.pad * hd
		}
		if f16 {
			g.k16, g.v16 = s.kv16[off:off+kn:off+kn], s.kv16[off+kn:off+kn+vn:off+kn+vn]
			g.vmat = kernels.Matrix{Type: gguf.F16, Rows: hd, Cols: g.pad, Data: bytes16(g.v16)}
		} else {
			g.k32, g.v32 = s.kv32[off:off+kn:off+kn], s.kv32[off+kn:off+kn+vn:off+kn+vn]
			g.vmat = kernels.Matrix{Type: gguf.F32, Rows: hd, Cols: g.pad, Data: bytes32(g.v32)}
		}
		off += kn + vn
	}
	off = 0
	take := func(n int) []float32 { b := s.attnBuf[off : off+n : off+n]; off += n; return b }
	vtOff := 0
	for i := range s.tasks {
		tk := &s.tasks[i]
		g := &s.groups[tk.group]
		nb := tk.q1 - tk.q0
		rows := seqs[g.seq-seqBase].Pos + tk.q1 // keys the block's last query sees
		tk.rows = rows
		tk.vcols = (rows + 7) &^ 7
		tk.qx, tk.out = take(nb*hd), take(nb*hd)
		tk.scores, tk.probs = nil, take(nb*tk.vcols)
		if !s.keysT {
			tk.scores = take(nb * rows)
		}
		tk.vmat, tk.vt16, tk.vt32 = g.vmat, nil, nil
		n := hd * tk.vcols
		if f16 {
			if !s.keysT {
				tk.kmat = kernels.Matrix{Type: gguf.F16, Rows: rows, Cols: hd, Data: bytes16(g.k16[:rows*hd])}
			}
			if tk.vcols < g.pad {
				tk.vt16 = s.vt16[vtOff : vtOff+n : vtOff+n]
				tk.vmat = kernels.Matrix{Type: gguf.F16, Rows: hd, Cols: tk.vcols, Data: bytes16(tk.vt16)}
				vtOff += n
			}
		} else {
			tk.kmat = kernels.Matrix{Type: gguf.F32, Rows: rows, Cols: hd, Data: bytes32(g.k32[:rows*hd])}
			if tk.vcols < g.pad {
				tk.vt32 = s.vt32[vtOff : vtOff+n : vtOff+n]
				tk.vmat = kernels.Matrix{Type: gguf.F32, Rows: hd, Cols: tk.vcols, Data: bytes32(tk.vt32)}
				vtOff += n
			}
		}
	}
}

// bindAttention makes the functions attend hands to the pool once, so
// no closure is allocated per layer. They read the layer, store and
// sequences from the scratch.
func (m *Model) bindAttention() {
	m.gatherFn = func(i int) { m.gather(m.s.layer, m.s.kv, m.s.seqs, &m.s.groups[i]) }
	m.attendFn = func(i int) { m.attendTask(m.s.seqs, &m.s.tasks[i]) }
	m.gatherAttendFn = func(i int) {
		g := &m.s.groups[i]
		m.gather(m.s.layer, m.s.kv, m.s.seqs, g)
		for t := g.t0; t < g.t1; t++ {
			m.attendTask(m.s.seqs, &m.s.tasks[t])
		}
	}
}

// gather copies a group's keys (row per position) and transposed values
// (row per dimension, zero past the last position) out of the pages.
//
// In a sliding-window layer it reads only the pages that hold a position
// some query of the step can see: a page wholly before the window of the
// step's first query is not read, and its rows are zero, which is what its
// zero attention probability multiplies anyway (so the result keeps its
// bits). The pages stay the sequence's own and in its table: the window
// narrows what is read, never whose pages may be read (I2).
func (m *Model) gather(li int, kv KVStore, seqs []Seq, g *attnGroup) {
	hd, K := m.Config.HeadDim, m.Config.KVDim()
	ps := kv.PageSize()
	pages := seqs[g.seq].Pages
	off := g.kvHead * hd
	skip := 0 // positions [0, skip) lie in pages no query of this step sees
	if windowedGather {
		skip = m.Config.windowStart(li, seqs[g.seq].Pos) / ps * ps
	}
	keysT := m.s.keysT
	if skip > 0 {
		switch {
		case keysT:
			for d := 0; d < hd; d++ {
				clear(g.k16[d*g.pad : d*g.pad+skip])
			}
		case g.k16 != nil:
			clear(g.k16[:skip*hd])
		default:
			clear(g.k32[:skip*hd])
		}
		for d := 0; d < hd; d++ {
			if g.v16 != nil {
				clear(g.v16[d*g.pad : d*g.pad+skip])
			} else {
				clear(g.v32[d*g.pad : d*g.pad+skip])
			}
		}
	}
	for p0 := skip; p0 < g.n; p0 += ps {
		cnt := min(ps, g.n-p0)
		if g.k16 != nil {
			kp, vp := kv.PageF16(li, int(pages[p0/ps]))
			if keysT {
				transpose16(g.k16[p0:], g.pad, kp[off:], K, cnt, hd)
			} else {
				for j := 0; j < cnt; j++ {
					src := j*K + off
					copy(g.k16[(p0+j)*hd:(p0+j+1)*hd], kp[src:src+hd])
				}
			}
			transpose16(g.v16[p0:], g.pad, vp[off:], K, cnt, hd)
		} else {
			kp, vp := kv.PageF32(li, int(pages[p0/ps]))
			for j := 0; j < cnt; j++ {
				src := j*K + off
				copy(g.k32[(p0+j)*hd:(p0+j+1)*hd], kp[src:src+hd])
				for d, x := range vp[src : src+hd] {
					g.v32[d*g.pad+p0+j] = x
				}
			}
		}
	}
	for d := 0; d < hd; d++ {
		if g.v16 != nil {
			clear(g.v16[d*g.pad+g.n : (d+1)*g.pad])
		} else {
			clear(g.v32[d*g.pad+g.n : (d+1)*g.pad])
		}
	}
}

// attendTask runs one task: scores of its queries against every key they
// see, causal softmax, and the probability-weighted sum of values.
func (m *Model) attendTask(seqs []Seq, tk *attnTask) {
	c := &m.Config
	s := &m.s
	g := &s.groups[tk.group]
	pos := seqs[g.seq].Pos
	hd, Q := c.HeadDim, c.QDim()
	nb, rows := tk.q1-tk.q0, tk.rows
	for b := 0; b < nb; b++ {
		t := tk.first + tk.q0 + b
		copy(tk.qx[b*hd:(b+1)*hd], s.q[t*Q+tk.head*hd:t*Q+(tk.head+1)*hd])
	}
	// Transposed keys score straight into the probabilities' rows (vcols
	// apart); MatMul's rows are rows apart, copied over after the softmax.
	scores, ld := tk.scores, rows
	if s.keysT {
		scores, ld = tk.probs, tk.vcols
		kernels.ScoresF16(scores, ld, g.k16, g.pad, rows, hd, tk.qx, nb)
	} else {
		m.serial.MatMul(scores, &tk.kmat, tk.qx, nb)
	}
	for b := 0; b < nb; b++ {
		valid := pos + tk.q0 + b + 1 // positions 0..Pos+q0+b
		lo := c.windowStart(s.layer, valid-1)
		sc := scores[b*ld : b*ld+valid]
		for j := range sc {
			sc[j] *= m.attnScale
		}
		softcap(sc, c.AttnSoftcap)
		kernels.Softmax(sc[lo:])
		pr := tk.probs[b*tk.vcols : (b+1)*tk.vcols]
		if !s.keysT {
			copy(pr, sc)
		}
		clear(pr[:lo])
		clear(pr[valid:])
	}
	for d := 0; d < hd && (tk.vt16 != nil || tk.vt32 != nil); d++ {
		if tk.vt16 != nil {
			copy(tk.vt16[d*tk.vcols:(d+1)*tk.vcols], g.v16[d*g.pad:])
		} else {
			copy(tk.vt32[d*tk.vcols:(d+1)*tk.vcols], g.v32[d*g.pad:])
		}
	}
	m.serial.MatMul(tk.out, &tk.vmat, tk.probs, nb)
	for b := 0; b < nb; b++ {
		t := tk.first + tk.q0 + b
		copy(s.att[t*Q+tk.head*hd:t*Q+(tk.head+1)*hd], tk.out[b*hd:(b+1)*hd])
	}
}

// bytes16 and bytes32 view element slices as the byte rows a
// kernels.Matrix holds (little-endian, as GGUF stores them; the kernels
// only run on little-endian machines).
func bytes16(x []uint16) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 2*len(x))
}

func bytes32(x []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 4*len(x))
}
