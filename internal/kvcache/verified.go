package kvcache

// StepPages is one sequence's page list for one step as the ownership
// check (DESIGN I2) passed it: the physical pages holding positions
// [0, pos+n) of one table, which may read [0, pos) and write [pos, pos+n).
// Its fields are unexported, so outside this package a StepPages holding
// pages exists only as VerifyStep's result; the zero value holds none and
// covers nothing.
type StepPages struct {
	pages  []int32
	owner  Owner
	pos, n int
}

// VerifyStep runs the ownership check of AppendStepPages and returns the
// pages as StepPages, the only way to make one.
func (p *Pool) VerifyStep(dst []int32, t *PageTable, pos, n int) (StepPages, error) {
	pages, err := p.AppendStepPages(dst, t, pos, n)
	if err != nil {
		return StepPages{}, err
	}
	return StepPages{pages: pages, owner: t.owner, pos: pos, n: n}, nil
}

// Pages is the verified list, in logical order (model.Seq.Pages).
func (s StepPages) Pages() []int32 { return s.pages }

// Owner is the page table the check ran for.
func (s StepPages) Owner() Owner { return s.owner }

// Covers reports whether the check ran for exactly positions [pos, pos+n):
// a step may use the pages only for the positions they were checked for.
func (s StepPages) Covers(pos, n int) bool {
	return s.pages != nil && s.pos == pos && s.n == n
}
