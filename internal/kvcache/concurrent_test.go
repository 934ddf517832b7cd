package kvcache

import (
	"errors"
	"sync"
	"testing"
)

// TestPoolIsSafeForConcurrentUse runs sequences and transfer leases from
// several goroutines (run it with -race) and checks accounting afterwards.
func TestPoolIsSafeForConcurrentUse(t *testing.T) {
	p := newTestPool(t, 16, 4)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				pt := p.NewTable()
				toks := seq(w*1000+i%3, 9)
				if _, err := p.MatchPrefix(pt, "s", toks); err != nil {
					errs <- err
					return
				}
				if err := p.Reserve(pt, len(toks)); errors.Is(err, ErrOutOfPages) {
					p.Free(pt)
					continue
				}
				if _, err := p.AppendStepPages(nil, pt, pt.Cached()*4, len(toks)-pt.Cached()*4); err != nil {
					errs <- err
					return
				}
				if err := p.Commit(pt, pt.Cached()*4, len(toks)-pt.Cached()*4); err != nil {
					errs <- err
					return
				}
				p.Cache(pt, "s", toks)
				l, err := p.Lease(pt, 0)
				if err != nil {
					errs <- err
					return
				}
				p.Free(pt)
				if err := p.Release(l); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if f := p.OwnershipFailures(); f != 0 {
		t.Fatalf("%d ownership failures in correct use", f)
	}
	mustDrain(t, p)
}
