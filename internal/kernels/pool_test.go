package kernels

import (
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// TestMatMulAllocatesNothing guards the decode path's allocation budget:
// a warmed-up MatMul (one token, decode batches, and 8 and 20 tokens, which
// reach the eight-token Q8_0 tile and the unpacked K-quant path) and a
// Parallel with a bound function make no heap allocation on a
// multi-threaded pool.
func TestMatMulAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race (sync.Pool drops items at random)")
	}
	p := NewPool(2)
	defer p.Close()
	r := rand.New(rand.NewPCG(5, 6))
	forEachKernelSet(t, func(set string) {
		for _, typ := range []gguf.Type{gguf.Q8_0, gguf.Q4_0, gguf.Q4_K, gguf.Q6_K, gguf.F16, gguf.F32} {
			m := randMatrix(t, r, typ, 256, 512)
			for _, batch := range []int{1, 4, 5, 8, 20} {
				x := randVec(r, batch*512, 1)
				out := make([]float32, batch*256)
				p.MatMul(out, m, x, batch) // warm the recycled buffers
				if n := testing.AllocsPerRun(50, func() { p.MatMul(out, m, x, batch) }); n > 0.1 {
					t.Errorf("%s: %s batch %d: %.2f allocations per MatMul, want 0", set, typ, batch, n)
				}
			}
		}
	})
	var sum atomic.Int64
	fn := func(i int) { sum.Add(int64(i)) }
	if n := testing.AllocsPerRun(50, func() { p.Parallel(64, fn) }); n > 0 {
		t.Errorf("%.2f allocations per Parallel, want 0", n)
	}
}

// TestPoolBackToBackJobsNeverMix runs many short jobs in a row, each with
// its own counters: every item of every job must run exactly once, and a
// worker late for one job must never run (or count) an item of the next.
func TestPoolBackToBackJobsNeverMix(t *testing.T) {
	p := NewPool(3)
	defer p.Close()
	for k := 0; k < 3000; k++ {
		n := 1 + k%7
		hits := make([]atomic.Int32, n)
		p.Parallel(n, func(i int) { hits[i].Add(1) })
		for i := range hits {
			if h := hits[i].Load(); h != 1 {
				t.Fatalf("job %d item %d ran %d times", k, i, h)
			}
		}
	}
}

// TestPoolRangedJobsRunEveryItemOnce mixes ranged jobs (MatMul's split:
// own run from the front, others' from the back) with plain ones, back to
// back, on pools of two and three threads: every item of every job must
// run exactly once, whichever thread took it, and a late thread must never
// take an item of a later job. Every fifth job is long enough (runs of
// hundreds of items) that threads claim several of their own at once.
func TestPoolRangedJobsRunEveryItemOnce(t *testing.T) {
	for _, threads := range []int{2, 3} {
		p := NewPool(threads)
		for k := 0; k < 3000; k++ {
			n := 1 + k%23
			if k%5 == 4 {
				n = 200 + 37*(k%29)
			}
			hits := make([]atomic.Int32, n)
			fn := func(i int) { hits[i].Add(1) }
			if n >= 200 {
				// Items that take a while, so that a job counted done
				// too soon is seen with items still in flight.
				fn = func(i int) {
					spin := 0
					for j := 0; j < 2000; j++ {
						spin += j * i
					}
					probeSink.Add(uint64(spin))
					hits[i].Add(1)
				}
			}
			if k%3 == 2 {
				p.Parallel(n, fn)
			} else {
				p.mu.Lock()
				p.publish(n, fn, true)
				p.mu.Unlock()
			}
			for i := range hits {
				if h := hits[i].Load(); h != 1 {
					t.Fatalf("%d threads, job %d (n=%d) item %d ran %d times", threads, k, n, i, h)
				}
			}
		}
		p.Close()
	}
}

// TestPoolRangedRunsAreContiguous checks the split itself on a pool with
// no workers running, so one thread does a whole job alone: its own run
// from the front, in order, then the other runs from their ends backwards.
func TestPoolRangedRunsAreContiguous(t *testing.T) {
	for _, c := range []struct {
		threads, self, n int
		want             []int
	}{
		{2, 0, 10, []int{0, 1, 2, 3, 4, 9, 8, 7, 6, 5}},
		{2, 1, 10, []int{5, 6, 7, 8, 9, 4, 3, 2, 1, 0}},
		{3, 1, 7, []int{2, 3, 6, 5, 4, 1, 0}},
		{2, 0, 1, []int{0}},
	} {
		p := &Pool{threads: c.threads, runs: make([]paddedRun, c.threads)}
		var order []int
		p.mu.Lock()
		p.gen++
		g := p.gen << 32
		p.fn = func(i int) { order = append(order, i) }
		p.layRuns(g, c.n)
		p.runItems(c.self)
		p.mu.Unlock()
		if !slices.Equal(order, c.want) {
			t.Errorf("%d threads, thread %d alone, %d items: ran %v, want %v", c.threads, c.self, c.n, order, c.want)
		}
	}
}

// TestPoolOwnClaimsAreFewAndBounded checks the size of a thread's claims
// on its own run: never none, never more than is left, never more than an
// eighth of it past the first items (so a thief always finds work while
// most of a run remains), and few enough that a 300-item run is claimed in
// a few dozen compare-and-swaps rather than 300.
func TestPoolOwnClaimsAreFewAndBounded(t *testing.T) {
	for _, n := range []uint64{1, 2, 7, 8, 9, 64, 300, 65535} {
		claims := 0
		for left := n; left > 0; {
			k := ownClaim(left)
			if k < 1 || k > left || left >= 16 && k > left/8 {
				t.Fatalf("ownClaim(%d) = %d", left, k)
			}
			left -= k
			claims++
		}
		if n == 300 && claims > 40 {
			t.Errorf("a 300-item run took %d claims", claims)
		}
	}
}
