package kernels

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestVectorOpsFastEqualReferenceBitForBit(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 13))
	for _, n := range []int{0, 1, 7, 8, 9, 63, 64, 65, 200} {
		a, b := randVec(r, n, 1), randVec(r, n, 1)
		h := make([]uint16, n)
		F32ToF16Slice(h, a)
		if got, want := Dot(a, b), dotRef(a, b); !sameBits(got, want) {
			t.Errorf("Dot n=%d: %g, ref %g", n, got, want)
		}
		if got, want := DotF16(h, b), dotF16Ref(h, b); !sameBits(got, want) {
			t.Errorf("DotF16 n=%d: %g, ref %g", n, got, want)
		}
		y1, y2 := append([]float32(nil), b...), append([]float32(nil), b...)
		Axpy(y1, 0.37, a)
		axpyRef(y2, 0.37, a)
		for i := range y1 {
			if !sameBits(y1[i], y2[i]) {
				t.Fatalf("Axpy n=%d [%d]: %g, ref %g", n, i, y1[i], y2[i])
			}
		}
		y1, y2 = append(y1[:0], b...), append(y2[:0], b...)
		AxpyF16(y1, -1.5, h)
		axpyF16Ref(y2, -1.5, h)
		for i := range y1 {
			if !sameBits(y1[i], y2[i]) {
				t.Fatalf("AxpyF16 n=%d [%d]: %g, ref %g", n, i, y1[i], y2[i])
			}
		}
	}
}

func TestVectorOpsApproximateFloat64(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 14))
	n := 300
	a, b := randVec(r, n, 1), randVec(r, n, 1)
	var exact, mag float64
	for i := range a {
		exact += float64(a[i]) * float64(b[i])
		mag += math.Abs(float64(a[i]) * float64(b[i]))
	}
	if d := math.Abs(float64(Dot(a, b)) - exact); d > mag*1e-6 {
		t.Errorf("Dot off by %g", d)
	}
	y := append([]float32(nil), b...)
	Axpy(y, 2, a)
	for i := range y {
		if want := float32(float64(b[i]) + 2*float64(a[i])); y[i] != want {
			t.Fatalf("Axpy[%d] = %g, want %g (a single rounding)", i, y[i], want)
		}
	}
}

func TestRMSNormScalesToUnitRootMeanSquare(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 15))
	x := randVec(r, 576, 3)
	w := make([]float32, len(x))
	for i := range w {
		w[i] = 1
	}
	out := make([]float32, len(x))
	RMSNorm(out, x, w, 0)
	var ss float64
	for _, v := range out {
		ss += float64(v) * float64(v)
	}
	if rms := math.Sqrt(ss / float64(len(out))); math.Abs(rms-1) > 1e-5 {
		t.Errorf("rms after norm = %g", rms)
	}
	w[3] = 2
	RMSNorm(out, x, w, 0)
	var ss2 float64
	for _, v := range x {
		ss2 += float64(v) * float64(v)
	}
	want := float64(x[3]) / math.Sqrt(ss2/float64(len(x))) * 2
	if math.Abs(float64(out[3])-want) > 1e-5*math.Abs(want) {
		t.Errorf("weighted element %g, want %g", out[3], want)
	}
}

func TestSoftmaxIsANormalisedDistribution(t *testing.T) {
	x := []float32{1000, 1001, 999, float32(math.Inf(-1))}
	Softmax(x)
	e := []float64{math.Exp(-1), 1, math.Exp(-2), 0}
	var s float64
	for _, v := range e {
		s += v
	}
	for i := range x {
		if math.Abs(float64(x[i])-e[i]/s) > 1e-7 {
			t.Errorf("x[%d] = %g, want %g", i, x[i], e[i]/s)
		}
	}
}

func TestSwiGLUIsSiluGateTimesUp(t *testing.T) {
	gate := []float32{0, 1, -1, 20, -20}
	up := []float32{3, 2, 2, 1, 1}
	out := make([]float32, len(gate))
	SwiGLU(out, gate, up)
	for i, g := range gate {
		want := float64(g) / (1 + math.Exp(-float64(g))) * float64(up[i])
		if math.Abs(float64(out[i])-want) > 1e-6*math.Max(1, math.Abs(want)) {
			t.Errorf("SwiGLU(%g)·%g = %g, want %g", g, up[i], out[i], want)
		}
	}
}

// TestMatMulBatchInvarianceProperty draws random shapes, types, batches and
// thread counts and checks each token's output against the token run alone
// through the reference.
func TestMatMulBatchInvarianceProperty(t *testing.T) {
	pools := map[int]*Pool{}
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	rapid.Check(t, func(rt *rapid.T) {
		typ := rapid.SampledFrom(allTypes).Draw(rt, "type")
		be := typ.BlockElems()
		blocks := rapid.IntRange(1, 4).Draw(rt, "blocks")
		cols := blocks * be
		if be == 1 {
			cols = rapid.IntRange(1, 100).Draw(rt, "cols")
		}
		rows := rapid.IntRange(1, 37).Draw(rt, "rows")
		batch := rapid.IntRange(1, 10).Draw(rt, "batch")
		threads := rapid.IntRange(1, 4).Draw(rt, "threads")
		seed := rapid.Uint64().Draw(rt, "seed")
		r := rand.New(rand.NewPCG(seed, 1))
		m := randMatrix(rt, r, typ, rows, cols)
		x := randVec(r, batch*cols, 2)
		p, ok := pools[threads]
		if !ok {
			p = NewPool(threads)
			pools[threads] = p
		}
		out := make([]float32, batch*rows)
		p.MatMul(out, m, x, batch)
		alone := make([]float32, rows)
		for b := 0; b < batch; b++ {
			MatMulRef(alone, m, x[b*cols:(b+1)*cols], 1)
			for row := range alone {
				if !sameBits(out[b*rows+row], alone[row]) {
					rt.Fatalf("%s %d×%d batch %d threads %d: token %d row %d = %g, alone %g",
						typ, rows, cols, batch, threads, b, row, out[b*rows+row], alone[row])
				}
			}
		}
	})
}

func TestPoolParallelRunsEveryIndexOnce(t *testing.T) {
	for threads := 1; threads <= 4; threads++ {
		p := NewPool(threads)
		if p.Threads() != threads {
			t.Fatalf("Threads() = %d", p.Threads())
		}
		for _, n := range []int{0, 1, 2, 5, 100} {
			hits := make([]int32, n)
			p.Parallel(n, func(i int) { hits[i]++ })
			for i, h := range hits {
				if h != 1 {
					t.Fatalf("threads %d n %d: index %d ran %d times", threads, n, i, h)
				}
			}
		}
		p.Close()
	}
	if p := NewPool(0); p.Threads() < 1 {
		t.Fatal("NewPool(0) has no threads")
	}
}

// TestSingleThreadPoolIsSafeForConcurrentUse runs MatMuls on one shared
// one-thread pool from inside another pool's Parallel tasks (the model's
// attention pattern) and checks every result against the reference.
func TestSingleThreadPoolIsSafeForConcurrentUse(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 19))
	serial, outer := NewPool(1), NewPool(3)
	defer serial.Close()
	defer outer.Close()
	const tasks = 12
	ms := make([]*Matrix, tasks)
	xs := make([][]float32, tasks)
	for i := range ms {
		ms[i] = randMatrix(t, r, allTypes[i%len(allTypes)], 9, 256)
		xs[i] = randVec(r, 3*256, 1)
	}
	got := make([][]float32, tasks)
	outer.Parallel(tasks, func(i int) {
		got[i] = make([]float32, 3*9)
		serial.MatMul(got[i], ms[i], xs[i], 3)
	})
	for i := range ms {
		want := make([]float32, 3*9)
		MatMulRef(want, ms[i], xs[i], 3)
		for j := range want {
			if !sameBits(got[i][j], want[j]) {
				t.Fatalf("task %d out[%d] = %g, want %g", i, j, got[i][j], want[j])
			}
		}
	}
}

// TestPoolSurvivesParkingAndWaking alternates bursts of tiny jobs (workers
// spinning) with pauses longer than spinFor (workers parked), checking
// every job runs every index exactly once, then closes the pool.
func TestPoolSurvivesParkingAndWaking(t *testing.T) {
	rounds := 300
	if short() {
		rounds = 60
	}
	for _, threads := range []int{2, 3} {
		p := NewPool(threads)
		for k := 0; k < rounds; k++ {
			if k%30 == 0 {
				time.Sleep(2 * spinFor)
			}
			n := 1 + k%9
			var hits [9]atomic.Int32
			p.Parallel(n, func(i int) { hits[i].Add(1) })
			for i := 0; i < n; i++ {
				if h := hits[i].Load(); h != 1 {
					t.Fatalf("threads %d round %d: index %d ran %d times", threads, k, i, h)
				}
			}
		}
		p.Close()
		p.Close() // idempotent
	}
}
