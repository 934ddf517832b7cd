package kvcache

// PageState is a page's state as an operator sees it (the page map, the
// worker's page endpoint). It is a read-only view; the pool's own bookkeeping
// stays private.
type PageState uint8

// The states a page map draws.
const (
	PageSentinel PageState = iota // page 0, never handed out
	PageFree                      // on the free list
	PageWriting                   // owned, some slots not yet written
	PageWritten                   // owned, every slot written
	PageShared                    // sealed read-only prefix page in the cache
	PageOrphan                    // freed by its owner, still leased to a transfer
)

var pageStateNames = [...]string{"sentinel", "free", "writing", "written", "shared", "orphan"}

func (s PageState) String() string {
	if int(s) < len(pageStateNames) {
		return pageStateNames[s]
	}
	return "unknown"
}

// PageInfo is one page's bookkeeping at the moment of a snapshot.
type PageInfo struct {
	State   PageState
	Owner   Owner // the writer; for a shared page, one of its holders (0 if none)
	Epoch   uint64
	Written int32 // slots the owner has written
	Refs    int32 // page tables holding it
	Leases  int32 // transfers pinning it
}

// PageInfos appends one PageInfo per physical page, sentinel first, to dst
// and returns it. It allocates nothing when dst has room for NumPages()+1
// entries, so a page map polling at several hertz costs the step loop only
// one short hold of the pool lock.
func (p *Pool) PageInfos(dst []PageInfo) []PageInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.pages {
		pg := &p.pages[i]
		in := PageInfo{Owner: pg.owner, Epoch: pg.epoch, Written: pg.written, Refs: int32(pg.refs()), Leases: pg.leases}
		switch pg.state {
		case stateSentinel:
			in.State = PageSentinel
		case stateFree:
			in.State = PageFree
		case stateOwned:
			in.State = PageWriting
			if int(pg.written) >= p.pageSize {
				in.State = PageWritten
			}
		case stateShared:
			in.State = PageShared
			if pg.holders.n > 0 {
				in.Owner = pg.holders.small[0]
			}
		case stateOrphan:
			in.State = PageOrphan
		}
		dst = append(dst, in)
	}
	return dst
}
