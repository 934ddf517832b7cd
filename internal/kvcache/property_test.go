package kvcache

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// liveSeq is the test's model of one sequence: its table and the tokens
// whose KV it has committed.
type liveSeq struct {
	pt   *PageTable
	salt string
	toks []int32
}

// poolModel drives random operations against a small pool and checks the
// invariants after each one.
type poolModel struct {
	p      *Pool
	seqs   map[Owner]*liveSeq
	stale  []*PageTable // copies of freed tables: must never pass the check
	leases []Lease
}

func (m *poolModel) pick(t *rapid.T) *liveSeq {
	if len(m.seqs) == 0 {
		t.Skip("no live sequence")
	}
	ids := make([]Owner, 0, len(m.seqs))
	for id := range m.seqs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return m.seqs[rapid.SampledFrom(ids).Draw(t, "seq")]
}

// tokens draws from a tiny alphabet so prefixes repeat and the cache hits.
func drawTokens(t *rapid.T, n int) []int32 {
	return rapid.SliceOfN(rapid.Int32Range(1, 2), n, n).Draw(t, "tokens")
}

func (m *poolModel) Start(t *rapid.T) {
	pt := m.p.NewTable()
	s := &liveSeq{pt: pt, salt: rapid.SampledFrom([]string{"a", "b"}).Draw(t, "salt")}
	prompt := drawTokens(t, rapid.IntRange(1, 12).Draw(t, "len"))
	n, err := m.p.MatchPrefix(pt, s.salt, prompt)
	if err != nil {
		t.Fatal(err)
	}
	s.toks = prompt[:n]
	m.seqs[pt.Owner()] = s
}

func (m *poolModel) Write(t *rapid.T) {
	s := m.pick(t)
	toks := drawTokens(t, rapid.IntRange(1, 6).Draw(t, "n"))
	pos := len(s.toks)
	if err := m.p.Reserve(s.pt, pos+len(toks)); err != nil {
		return // out of pages: a real scheduler would preempt
	}
	pages, err := m.p.AppendStepPages(nil, s.pt, pos, len(toks))
	if err != nil {
		t.Fatalf("own step rejected: %v", err)
	}
	for i, tok := range toks {
		k, _ := m.p.PageF32(0, int(pages[(pos+i)/m.p.PageSize()]))
		k[((pos+i)%m.p.PageSize())*2] = float32(tok)
	}
	if err := m.p.Commit(s.pt, pos, len(toks)); err != nil {
		t.Fatal(err)
	}
	s.toks = append(s.toks, toks...)
}

func (m *poolModel) Cache(t *rapid.T) {
	s := m.pick(t)
	m.p.Cache(s.pt, s.salt, s.toks)
}

func (m *poolModel) Lease(t *rapid.T) {
	s := m.pick(t)
	if s.pt.Len() == 0 {
		t.Skip("empty table")
	}
	l, err := m.p.Lease(s.pt, rapid.IntRange(0, s.pt.Len()-1).Draw(t, "i"))
	if err != nil {
		t.Fatal(err)
	}
	m.leases = append(m.leases, l)
}

func (m *poolModel) Release(t *rapid.T) {
	if len(m.leases) == 0 {
		t.Skip("no lease")
	}
	i := rapid.IntRange(0, len(m.leases)-1).Draw(t, "lease")
	if err := m.p.Release(m.leases[i]); err != nil {
		t.Fatal(err)
	}
	m.leases = slices.Delete(m.leases, i, i+1)
}

func (m *poolModel) Free(t *rapid.T) {
	s := m.pick(t)
	m.stale = append(m.stale, &PageTable{owner: s.pt.owner, entries: slices.Clone(s.pt.entries)})
	m.p.Free(s.pt)
	delete(m.seqs, s.pt.owner)
}

// Check asserts I2 (every live table passes and reads back exactly its own
// tokens; every freed table with pages fails) and I7 (each page's state and
// reference count agree with the tables that hold it).
func (m *poolModel) Check(t *rapid.T) {
	holders := map[int32]map[Owner]bool{}
	for id, s := range m.seqs {
		if got := readTokens(t, m.p, s.pt, len(s.toks)); !slices.Equal(got, s.toks) {
			t.Fatalf("owner %d reads %v, wrote %v", id, got, s.toks)
		}
		for _, e := range s.pt.entries {
			if holders[e.Page] == nil {
				holders[e.Page] = map[Owner]bool{}
			}
			holders[e.Page][id] = true
		}
	}
	for _, st := range m.stale {
		if len(st.entries) > 0 {
			if _, err := m.p.AppendStepPages(nil, st, 0, 1); err == nil {
				t.Fatalf("freed table of owner %d passed the check", st.owner)
			}
		}
	}
	leased := map[int32]int32{}
	for _, l := range m.leases {
		leased[l.Entry.Page]++
	}
	m.p.mu.Lock()
	defer m.p.mu.Unlock()
	free := 0
	for n := 1; n < len(m.p.pages); n++ {
		pg := &m.p.pages[n]
		h := holders[int32(n)]
		if pg.refs() != len(h) || pg.leases != leased[int32(n)] {
			t.Fatalf("page %d: refs %d leases %d, tables %d leases %d", n, pg.refs(), pg.leases, len(h), leased[int32(n)])
		}
		if pg.state == stateOwned && !h[pg.owner] {
			t.Fatalf("page %d owned by %d, which does not hold it", n, pg.owner)
		}
		if pg.state == stateFree {
			free++
		}
		if pg.state == stateOrphan && pg.leases == 0 {
			t.Fatalf("orphan page %d has no lease", n)
		}
	}
	if free != len(m.p.free) {
		t.Fatalf("%d pages in state free, free list has %d", free, len(m.p.free))
	}
}

func TestPoolKeepsOwnershipAndAccountingUnderRandomOperations(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &poolModel{p: newTestPool(t, 6, 4), seqs: map[Owner]*liveSeq{}}
		t.Repeat(rapid.StateMachineActions(m))
		for _, s := range m.seqs {
			m.p.Free(s.pt)
		}
		for _, l := range m.leases {
			if err := m.p.Release(l); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.p.CheckDrained(); err != nil {
			t.Fatal(err)
		}
		m.p.DropCache()
		if m.p.FreePages() != m.p.UsablePages() {
			t.Fatalf("%d of %d pages free after drain", m.p.FreePages(), m.p.UsablePages())
		}
	})
}
