package sched

// fairQueue holds waiting sequences in one FIFO per tenant and hands them out
// round robin across tenants, so one tenant's flood of requests cannot
// starve another tenant's single request.
type fairQueue struct {
	tenants []string // ring, in order of first arrival
	queues  map[string][]*seq
	cursor  int // index into tenants of the next tenant to serve
	n       int
}

func (f *fairQueue) len() int { return f.n }

func (f *fairQueue) push(q *seq, front bool) {
	if f.queues == nil {
		f.queues = map[string][]*seq{}
	}
	t := q.req.Tenant
	if _, ok := f.queues[t]; !ok {
		f.tenants = append(f.tenants, t)
	}
	if front {
		f.queues[t] = append([]*seq{q}, f.queues[t]...)
	} else {
		f.queues[t] = append(f.queues[t], q)
	}
	f.n++
}

// peek returns the head of the next tenant's queue, or nil.
func (f *fairQueue) peek() *seq {
	if f.n == 0 {
		return nil
	}
	return f.queues[f.tenants[f.cursor]][0]
}

// pop removes the sequence peek returned and moves on to the next tenant.
func (f *fairQueue) pop() {
	t := f.tenants[f.cursor]
	f.queues[t] = f.queues[t][1:]
	f.n--
	if len(f.queues[t]) == 0 {
		f.dropTenant(f.cursor)
		return
	}
	f.cursor = (f.cursor + 1) % len(f.tenants)
}

// remove takes q out wherever it waits.
func (f *fairQueue) remove(q *seq) {
	t := q.req.Tenant
	for i, x := range f.queues[t] {
		if x == q {
			f.queues[t] = append(f.queues[t][:i:i], f.queues[t][i+1:]...)
			f.n--
			break
		}
	}
	if len(f.queues[t]) == 0 {
		for i, name := range f.tenants {
			if name == t {
				f.dropTenant(i)
				break
			}
		}
	}
}

func (f *fairQueue) dropTenant(i int) {
	delete(f.queues, f.tenants[i])
	f.tenants = append(f.tenants[:i:i], f.tenants[i+1:]...)
	if i < f.cursor {
		f.cursor--
	}
	if f.cursor >= len(f.tenants) {
		f.cursor = 0
	}
}
