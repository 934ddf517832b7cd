package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Pool is a fixed set of worker goroutines that share out matrix work. The
// goroutine calling MatMul or Parallel works too, so a pool of n threads
// starts n−1 goroutines.
//
// A pool of one thread runs everything on the caller and may be used by
// many goroutines at once (for example inside another pool's Parallel
// tasks). A larger pool runs one job at a time: concurrent callers are
// serialised, and a task must not call back into its own pool.
type Pool struct {
	threads int
	mu      sync.Mutex // one job at a time
	work    chan *job
	closed  sync.Once
}

// job is one Parallel call: fn(i) for i in [0,n), items claimed through next.
type job struct {
	n    int64
	next atomic.Int64
	fn   func(i int)
	wg   sync.WaitGroup
}

func (j *job) run() {
	for {
		i := j.next.Add(1) - 1
		if i >= j.n {
			return
		}
		j.fn(int(i))
	}
}

// NewPool starts a pool of threads workers; threads <= 0 means
// runtime.NumCPU().
func NewPool(threads int) *Pool {
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	p := &Pool{threads: threads, work: make(chan *job)}
	for i := 1; i < threads; i++ {
		go func() {
			for j := range p.work {
				j.run()
				j.wg.Done()
			}
		}()
	}
	return p
}

// Close stops the workers. The pool must not be used afterwards.
func (p *Pool) Close() { p.closed.Do(func() { close(p.work) }) }

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
	j := &job{n: int64(n), fn: fn}
	helpers := min(p.threads-1, n-1)
	j.wg.Add(helpers)
	for i := 0; i < helpers; i++ {
		p.work <- j
	}
	j.run()
	j.wg.Wait()
}
