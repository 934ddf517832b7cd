package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Pool is a fixed set of worker goroutines that share out matrix work. The
// goroutine calling MatMul or Parallel works too, so a pool of n threads
// starts n−1 goroutines.
//
// Decode runs hundreds of small products per token, each a few
// microseconds long — shorter than waking a parked goroutine. So after a
// job a worker keeps polling for the next one for spinFor before it parks;
// during generation the workers stay hot, and an idle pool sleeps.
//
// A pool of one thread runs everything on the caller and may be used by
// many goroutines at once (for example inside another pool's Parallel
// tasks). A larger pool runs one job at a time: concurrent callers are
// serialised, and a task must not call back into its own pool.
type Pool struct {
	threads int
	mu      sync.Mutex // one job at a time

	seq    atomic.Uint64   // jobs published so far
	parked []atomic.Bool   // worker i is (about to be) blocked on wake[i]
	wake   []chan struct{} // capacity 1: a pending wake-up
	closed atomic.Bool

	// The current job, reused for every call so a call allocates nothing.
	// claim is gen<<32 | next item and size is gen<<32 | n: a worker claims
	// an item by a compare-and-swap on claim that carries the generation,
	// so a worker that is late for one job can never take (or count) an
	// item of the next. fn is written before the generation is published
	// and read only after a successful claim, and is not rewritten until
	// every claimed item is done.
	claim atomic.Uint64
	size  atomic.Uint64
	done  atomic.Int64
	gen   uint64 // under mu
	fn    func(i int)

	// runs are a ranged job's per-thread item ranges (see publish),
	// each gen<<32 | next<<16 | end, a cache line each: every claim
	// writes its thread's word, and words sharing a line made each claim a
	// transfer of the line between cores.
	runs []paddedRun

	// mm holds the operands of the MatMul in flight, so its work items run
	// through one method value (mmFn) bound at NewPool instead of a fresh
	// closure per call.
	mm   mmJob
	mmFn func(i int)
	qa   qaJob
	qaFn func(i int)
}

// spinFor is how long an idle worker polls for work before parking.
const spinFor = 200 * time.Microsecond

// maxItems bounds n in one job (the claim word keeps the item index in its
// low 32 bits); Parallel splits larger n into several jobs.
const maxItems = 1 << 30

// rangedBit in size marks a ranged job, whose items are claimed from runs.
const rangedBit = 1 << 31

// maxRanged bounds n in a ranged job (16 bits of a run word each).
const maxRanged = 1<<16 - 1

// paddedRun is a run word alone on its 64-byte cache line.
type paddedRun struct {
	atomic.Uint64
	_ [56]byte
}

// runItems claims and runs items of the current job until none are left;
// self is the calling thread's index (0 for the publisher, i+1 for worker i).
func (p *Pool) runItems(self int) {
	for {
		c := p.claim.Load()
		sz := p.size.Load()
		if sz&rangedBit != 0 {
			p.runRanged(self, sz>>32)
			return
		}
		if c>>32 != sz>>32 || c&0xffffffff >= sz&0xffffffff {
			return
		}
		if !p.claim.CompareAndSwap(c, c+1) {
			continue
		}
		p.fn(int(c & 0xffffffff))
		p.done.Add(1)
	}
}

// NewPool starts a pool of threads workers; threads <= 0 means
// runtime.NumCPU().
func NewPool(threads int) *Pool {
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	p := &Pool{threads: threads}
	p.mmFn = p.mm.item
	p.qaFn = p.qa.item
	p.runs = make([]paddedRun, threads)
	p.parked = make([]atomic.Bool, threads-1)
	p.wake = make([]chan struct{}, threads-1)
	for i := range p.wake {
		p.wake[i] = make(chan struct{}, 1)
		go p.worker(i)
	}
	return p
}

// Close stops the workers. The pool must not be used afterwards.
func (p *Pool) Close() {
	if p.closed.Swap(true) {
		return
	}
	for _, w := range p.wake {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

// Threads is the number of threads work is shared across.
func (p *Pool) Threads() int { return p.threads }

// Parallel runs fn(i) for i in [0,n) across the pool and returns when all
// calls have returned. Items are handed out dynamically, so fn must not
// depend on which thread runs it.
func (p *Pool) Parallel(n int, fn func(i int)) {
	if n <= 0 {
		return
	}
	if p.threads == 1 || n == 1 {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.parallelLocked(n, fn)
}

// parallelLocked is Parallel with p.mu held and threads > 1.
func (p *Pool) parallelLocked(n int, fn func(i int)) {
	for base := 0; base < n; base += maxItems {
		k := min(n-base, maxItems)
		if base == 0 && k == n {
			p.publish(k, fn, false)
		} else {
			p.publish(k, func(i int) { fn(base + i) }, false)
		}
	}
}

// publish runs one job of n items and waits for it: items claimed in
// turn from one counter (n ≤ maxItems), or, ranged (n ≤ maxRanged), split
// into one contiguous run per thread, each thread taking its own run from
// the front, in order, then stealing from the back of the others'.
// Decode products are memory-bound, and a thread walking one contiguous
// range keeps its prefetches (rows_avx512_amd64.s, the hardware's streams)
// on bytes it will read itself; items claimed in turn sent each thread's
// prefetches into its neighbour's chunk (BenchmarkDecodeSplit, Q8_0: 0.66–
// 0.88 of the read probe in turn, 0.81–0.91 ranged). Items run once each,
// on whichever thread.
func (p *Pool) publish(n int, fn func(i int), ranged bool) {
	p.gen++
	g := p.gen << 32
	p.fn = fn
	p.done.Store(0)
	if ranged {
		p.layRuns(g, n)
	} else {
		p.size.Store(g | uint64(n))
	}
	p.claim.Store(g)
	p.start(n)
}

// layRuns splits ranged job g's n items into one run per thread and marks
// the job ranged.
func (p *Pool) layRuns(g uint64, n int) {
	for k := range p.runs {
		lo, hi := uint64(n*k/p.threads), uint64(n*(k+1)/p.threads)
		p.runs[k].Store(g | lo<<16 | hi)
	}
	p.size.Store(g | rangedBit | uint64(n))
}

// start wakes parked workers for the published job of n items, works on it
// and waits until every item is done.
func (p *Pool) start(n int) {
	p.seq.Add(1)
	// A worker sets parked before its last look at seq, and this looks at
	// parked after publishing seq, so a parked worker is always woken.
	for i := range p.parked {
		if p.parked[i].Load() {
			select {
			case p.wake[i] <- struct{}{}:
			default:
			}
		}
	}
	p.runItems(0)
	for spins := 0; p.done.Load() < int64(n); spins++ {
		if spins&63 == 63 {
			runtime.Gosched()
		}
	}
	p.fn = nil
}

// runRanged runs items of ranged job gen: run self from the front, then
// the other runs from the back. A claim is a compare-and-swap on a run word
// that carries the generation, so a late thread never takes an item of a
// later job. A thread takes an eighth of what is left of its own run at a
// time (at least one item): a few claims per product instead of one per
// item, while what another thread may steal stays within an eighth of the
// run of the balance.
func (p *Pool) runRanged(self int, gen uint64) {
	own := &p.runs[self]
	for {
		w := own.Load()
		next, end := w>>16&0xffff, w&0xffff
		if w>>32 != gen || next >= end {
			break
		}
		k := ownClaim(end - next)
		if own.CompareAndSwap(w, w+k<<16) {
			for i := next; i < next+k; i++ {
				p.fn(int(i))
			}
			p.done.Add(int64(k))
		}
	}
	for k := 1; k < len(p.runs); k++ {
		r := &p.runs[(self+k)%len(p.runs)]
		for {
			w := r.Load()
			next, end := w>>16&0xffff, w&0xffff
			if w>>32 != gen {
				return
			}
			if next >= end {
				break
			}
			if r.CompareAndSwap(w, w-1) {
				p.fn(int(end - 1))
				p.done.Add(1)
			}
		}
	}
}

// ownClaim is how many of the left items of its own run a thread claims
// at once: an eighth, at least one.
func ownClaim(left uint64) uint64 { return max(1, left/8) }

func (p *Pool) worker(id int) {
	var seen uint64
	for {
		seen = p.waitJob(id, seen)
		if p.closed.Load() {
			return
		}
		// The latest job; an older one a slow worker missed has already
		// been finished by others.
		p.runItems(id + 1)
	}
}

// waitJob returns the job count once it differs from seen, or when the
// pool closes: polling for spinFor, then parked on wake[id].
func (p *Pool) waitJob(id int, seen uint64) uint64 {
	deadline := time.Now().Add(spinFor)
	for spins := 1; ; spins++ {
		if s := p.seq.Load(); s != seen || p.closed.Load() {
			return s
		}
		if spins&127 == 0 {
			if time.Now().After(deadline) {
				break
			}
			runtime.Gosched()
		}
	}
	for {
		p.parked[id].Store(true)
		if s := p.seq.Load(); s != seen || p.closed.Load() {
			p.parked[id].Store(false)
			return s
		}
		<-p.wake[id]
		p.parked[id].Store(false)
	}
}
