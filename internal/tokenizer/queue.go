package tokenizer

// pairQueue is a binary heap of merge candidates; before says which of two
// candidates is popped first. It is hand-rolled rather than container/heap
// to avoid interface boxing in the innermost loop of tokenization.
type pairQueue[T any] struct {
	items  []T
	before func(a, b T) bool
}

func (q *pairQueue[T]) len() int { return len(q.items) }

func (q *pairQueue[T]) push(x T) {
	q.items = append(q.items, x)
	i := len(q.items) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !q.before(q.items[i], q.items[parent]) {
			break
		}
		q.items[i], q.items[parent] = q.items[parent], q.items[i]
		i = parent
	}
}

func (q *pairQueue[T]) pop() T {
	top := q.items[0]
	last := len(q.items) - 1
	q.items[0] = q.items[last]
	q.items = q.items[:last]
	i := 0
	for {
		l, r, best := 2*i+1, 2*i+2, i
		if l < last && q.before(q.items[l], q.items[best]) {
			best = l
		}
		if r < last && q.before(q.items[r], q.items[best]) {
			best = r
		}
		if best == i {
			return top
		}
		q.items[i], q.items[best] = q.items[best], q.items[i]
		i = best
	}
}
