package engine

// fairQueue holds waiting reservations in one FIFO per tenant and serves
// them round robin across tenants, so one tenant's burst cannot starve
// another's single request (machine only).
type fairQueue struct {
	tenants []string
	queues  map[string][]*job
	cursor  int
	n       int
}

func (f *fairQueue) len() int { return f.n }

func (f *fairQueue) push(tenant string, w *job) {
	if f.queues == nil {
		f.queues = map[string][]*job{}
	}
	if _, ok := f.queues[tenant]; !ok {
		f.tenants = append(f.tenants, tenant)
	}
	f.queues[tenant] = append(f.queues[tenant], w)
	f.n++
}

// peek returns the head of the current tenant's queue, or nil.
func (f *fairQueue) peek() *job {
	if f.n == 0 {
		return nil
	}
	return f.queues[f.tenants[f.cursor]][0]
}

// pop removes what peek returned and moves on to the next tenant.
func (f *fairQueue) pop() {
	t := f.tenants[f.cursor]
	f.drop(t, 0)
	if _, ok := f.queues[t]; ok {
		f.cursor = (f.cursor + 1) % len(f.tenants)
	}
}

// remove takes out the first entry matching pred and returns it, or nil.
func (f *fairQueue) remove(pred func(*job) bool) *job {
	for _, t := range f.tenants {
		for i, w := range f.queues[t] {
			if pred(w) {
				f.drop(t, i)
				return w
			}
		}
	}
	return nil
}

// drop deletes entry i of tenant t, forgetting the tenant when empty.
func (f *fairQueue) drop(t string, i int) {
	q := f.queues[t]
	q = append(q[:i], q[i+1:]...)
	f.n--
	if len(q) > 0 {
		f.queues[t] = q
		return
	}
	delete(f.queues, t)
	for k, name := range f.tenants {
		if name == t {
			f.tenants = append(f.tenants[:k], f.tenants[k+1:]...)
			if f.cursor > k {
				f.cursor--
			}
			break
		}
	}
	if len(f.tenants) == 0 || f.cursor >= len(f.tenants) {
		f.cursor = 0
	}
}
