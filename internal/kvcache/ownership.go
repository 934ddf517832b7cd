package kvcache

import (
	"errors"
	"fmt"
	"github.com/bulkhead-llm/bulkhead/internal/incident"
)

// ErrOwnership matches every failed ownership check (DESIGN I2).
var ErrOwnership = errors.New("kvcache: page ownership check failed")

// Violation says why an ownership check failed.
type Violation uint8

// The ways a page table entry can fail the check.
const (
	ViolationNotReserved Violation = iota + 1 // the table has too few pages for the step
	ViolationSentinel                         // entry names page 0
	ViolationRange                            // entry names a page beyond the pool
	ViolationStaleEpoch                       // the page was reallocated since
	ViolationFreed                            // the page is no longer held by anyone
	ViolationForeign                          // the page belongs to another owner
	ViolationUnwritten                        // a slot read was never written by the owner
	ViolationSharedWrite                      // a write into a read-only shared page
)

var violationNames = [...]string{"", "not reserved", "sentinel page", "page out of range",
	"stale epoch", "freed page", "foreign page", "unwritten slot", "write to shared page"}

func (v Violation) String() string {
	if int(v) < len(violationNames) {
		return violationNames[v]
	}
	return fmt.Sprintf("violation(%d)", uint8(v))
}

// OwnershipError reports which entry of which table failed and why.
type OwnershipError struct {
	Owner  Owner
	Index  int // logical page index in the table
	Entry  Entry
	Reason Violation
}

func (e *OwnershipError) Error() string {
	return fmt.Sprintf("kvcache: owner %d page table entry %d (page %d epoch %d): %s",
		e.Owner, e.Index, e.Entry.Page, e.Entry.Epoch, e.Reason)
}

// Unwrap lets errors.Is(err, ErrOwnership) hold.
func (e *OwnershipError) Unwrap() error { return ErrOwnership }

// AppendStepPages verifies that t may read positions [0, pos) and write
// positions [pos, pos+n) this step, and appends the physical pages holding
// [0, pos+n) to dst, ready for model.Seq.Pages. The check runs once per page:
// the epoch must match and the page must be t's own with every slot read
// already written, or a shared prefix page t holds a reference to (which it
// may read but never write). On failure it returns dst unchanged, an
// *OwnershipError, and counts the failure.
func (p *Pool) AppendStepPages(dst []int32, t *PageTable, pos, n int) ([]int32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkLocked(t, pos, n); err != nil {
		return dst, err
	}
	for _, e := range t.entries[:p.PagesFor(pos+n)] {
		dst = append(dst, e.Page)
	}
	return dst, nil
}

// Commit records that the step writing positions [pos, pos+n) of t has
// completed, so later steps may read them. The pages written must still be
// t's own; the pages only read were checked when the step was planned.
func (p *Pool) Commit(t *PageTable, pos, n int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	ps := p.pageSize
	if pos < 0 || n < 0 || p.PagesFor(pos+n) > len(t.entries) {
		p.failures.Add(1)
		return &OwnershipError{Owner: t.owner, Index: len(t.entries), Reason: ViolationNotReserved}
	}
	for i := pos / ps; i*ps < pos+n; i++ {
		e := t.entries[i]
		if e.Page <= 0 || int(e.Page) >= len(p.pages) || p.pages[e.Page].epoch != e.Epoch ||
			p.pages[e.Page].state != stateOwned || p.pages[e.Page].owner != t.owner {
			if err := p.checkLocked(t, pos, n); err != nil { // classifies and counts it
				return err
			}
			p.failures.Add(1)
			return &OwnershipError{Owner: t.owner, Index: i, Entry: e, Reason: ViolationForeign}
		}
	}
	for i := pos / ps; i*ps < pos+n; i++ {
		end := min(ps, pos+n-i*ps)
		pg := &p.pages[t.entries[i].Page]
		if int32(end) > pg.written {
			pg.written = int32(end)
		}
	}
	return nil
}

// checkLocked is the I2 check for a step reading [0, pos) and writing
// [pos, pos+n).
func (p *Pool) checkLocked(t *PageTable, pos, n int) error {
	fail := func(i int, e Entry, v Violation) error {
		p.failures.Add(1)
		return &OwnershipError{Owner: t.owner, Index: i, Entry: e, Reason: v}
	}
	if pos < 0 || n < 0 {
		return fail(0, Entry{}, ViolationNotReserved)
	}
	ps := p.pageSize
	np := p.PagesFor(pos + n)
	if np > len(t.entries) {
		return fail(len(t.entries), Entry{}, ViolationNotReserved)
	}
	for i, e := range t.entries[:np] {
		if e.Page == 0 {
			return fail(i, e, ViolationSentinel)
		}
		if e.Page < 0 || int(e.Page) >= len(p.pages) {
			return fail(i, e, ViolationRange)
		}
		pg := &p.pages[e.Page]
		if pg.epoch != e.Epoch {
			return fail(i, e, ViolationStaleEpoch)
		}
		base := i * ps
		read := min(ps, max(0, pos-base))                // slots [0, read) must hold KV
		writes := min(ps, pos+n-base) > max(0, pos-base) // slots written this step
		switch pg.state {
		case stateOwned:
			if pg.owner != t.owner {
				return fail(i, e, ViolationForeign)
			}
		case stateShared:
			if !pg.holders.has(t.owner) {
				return fail(i, e, ViolationForeign)
			}
			if writes {
				return fail(i, e, ViolationSharedWrite)
			}
		case stateOrphan:
			return fail(i, e, ViolationForeign)
		default:
			return fail(i, e, ViolationFreed)
		}
		if int32(read) > pg.written && !incident.Active().SkipWrittenCheck() {
			return fail(i, e, ViolationUnwritten)
		}
	}
	return nil
}
