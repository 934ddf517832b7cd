package kernels

import "sync"

// freeList recycles scratch values (activations, per-item buffers) and
// the buffers they have grown. It is a locked list, not a sync.Pool: a
// Put lands in the putting P's private slot, which a Get on another P
// cannot see, so a goroutine that had moved to the other thread built a
// fresh value and regrew its buffers (TestGemmAllocatesNothing failed
// that way in 6–9 of 200 runs). It keeps at most freeListMax values, as
// many as were in use at once; nothing is freed, like a pool between
// collections.
type freeList[T any] struct {
	mu   sync.Mutex
	list []*T
}

const freeListMax = 16

// get returns a recycled value, or a new zero one.
func (f *freeList[T]) get() *T {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.list); n > 0 {
		v := f.list[n-1]
		f.list = f.list[:n-1]
		return v
	}
	return new(T)
}

// put returns v to the list; v must not be used after.
func (f *freeList[T]) put(v *T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.list) < freeListMax {
		f.list = append(f.list, v)
	}
}
