package sched

import "github.com/bulkhead-llm/bulkhead/internal/kvcache"

// SeqInfo is one live request as an operator's page map shows it: whose it
// is, where it is in its lifecycle, and which page-table owner id its pages
// carry (so the map can colour pages by tenant).
type SeqInfo struct {
	ID        uint64
	Tenant    string
	State     State
	Owner     kvcache.Owner
	Prompt    int // prompt tokens
	Computed  int // leading tokens whose KV is committed
	Generated int
	Pages     int // pages in its table
}

// AppendSeqs appends a SeqInfo for every request the scheduler holds to dst.
// Like every Scheduler method it runs on the engine's loop goroutine; it
// only reads.
func (s *Scheduler) AppendSeqs(dst []SeqInfo) []SeqInfo {
	for id, q := range s.seqs {
		dst = append(dst, SeqInfo{
			ID: id, Tenant: q.req.Tenant, State: q.state, Owner: q.pt.Owner(),
			Prompt: len(q.req.Prompt), Computed: q.computed, Generated: q.generated, Pages: q.pt.Len(),
		})
	}
	return dst
}
