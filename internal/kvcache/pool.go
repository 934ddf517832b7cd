package kvcache

import (
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// ErrOutOfPages is returned by Reserve when the pool cannot supply the pages
// a table needs, even after evicting every unreferenced cached page.
var ErrOutOfPages = errors.New("kvcache: out of pages")

// Owner identifies the sequence a page table belongs to. Zero is no owner.
type Owner uint64

type pageState uint8

const (
	stateSentinel pageState = iota // page 0, never handed out
	stateFree                      // on the free list
	stateOwned                     // being written by one owner
	stateShared                    // sealed read-only prefix page in the cache
	stateOrphan                    // freed by its owner while a transfer leases it
)

// page is the pool's bookkeeping for one physical page.
type page struct {
	state   pageState
	owner   Owner // stateOwned: the writer
	epoch   uint64
	written int32
	leases  int32
	holders holderSet   // stateShared: the tables referencing it
	entry   *cacheEntry // stateShared: its prefix-cache entry
}

// refs is the page's reference count: page tables that hold it.
func (pg *page) refs() int {
	switch pg.state {
	case stateOwned:
		return 1
	case stateShared:
		return pg.holders.len()
	}
	return 0
}

// Pool is a fixed set of KV pages. It implements model.KVStore.
type Pool struct {
	cfg       Config
	pageSize  int
	pageElems int // PageSize × KVDim
	k16, v16  [][]uint16
	k32, v32  [][]float32

	mu    sync.Mutex
	pages []page  // index = physical page number; pages[0] is the sentinel
	free  []int32 // stack of free page numbers
	cache prefixCache

	failures atomic.Uint64
	owners   atomic.Uint64 // last owner id handed out
}

// New allocates a pool sized by cfg.
func New(cfg Config) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n, _ := cfg.NumPages() // Validate checked it
	ps := cfg.pageSize()
	p := &Pool{cfg: cfg, pageSize: ps, pageElems: ps * cfg.KVDim, pages: make([]page, n+1)}
	layerElems := (n + 1) * p.pageElems
	if cfg.DType == gguf.F16 {
		p.k16, p.v16 = make([][]uint16, cfg.Layers), make([][]uint16, cfg.Layers)
		for l := range cfg.Layers {
			p.k16[l], p.v16[l] = make([]uint16, layerElems), make([]uint16, layerElems)
		}
	} else {
		p.k32, p.v32 = make([][]float32, cfg.Layers), make([][]float32, cfg.Layers)
		for l := range cfg.Layers {
			p.k32[l], p.v32[l] = make([]float32, layerElems), make([]float32, layerElems)
		}
	}
	p.free = make([]int32, 0, n)
	for i := n; i >= 1; i-- { // stack: page 1 is handed out first
		p.pages[i].state = stateFree
		p.free = append(p.free, int32(i))
	}
	if _, err := rand.Read(p.cache.seed[:]); err != nil {
		return nil, fmt.Errorf("kvcache: prefix-cache seed: %w", err)
	}
	// Sized for every page, so that sealing pages never grows the map.
	p.cache.entries = make(map[[32]byte]*cacheEntry, n)
	p.cache.slots = make([]cacheEntry, n+1)
	p.cache.blockTokens = make([]int32, (n+1)*ps)
	return p, nil
}

// PageSize is the number of token slots per page.
func (p *Pool) PageSize() int { return p.pageSize }

// DType is the element type of K and V: gguf.F16 or gguf.F32.
func (p *Pool) DType() gguf.Type { return p.cfg.DType }

// PageF16 returns the key and value blocks of page pg in layer l (F16 pools).
func (p *Pool) PageF16(layer, pg int) (k, v []uint16) {
	off := pg * p.pageElems
	return p.k16[layer][off : off+p.pageElems : off+p.pageElems], p.v16[layer][off : off+p.pageElems : off+p.pageElems]
}

// PageF32 returns the key and value blocks of page pg in layer l (F32 pools).
func (p *Pool) PageF32(layer, pg int) (k, v []float32) {
	off := pg * p.pageElems
	return p.k32[layer][off : off+p.pageElems : off+p.pageElems], p.v32[layer][off : off+p.pageElems : off+p.pageElems]
}

// Pages is the number of page ids the store holds, the sentinel included:
// every valid id is below it. The model's forward pass asks for it (its
// pageCounter) to refuse a page id outside the store before indexing it.
func (p *Pool) Pages() int { return len(p.pages) }

// UsablePages is the number of pages the pool hands out (the sentinel excluded).
func (p *Pool) UsablePages() int { return len(p.pages) - 1 }

// Tokens is the pool's capacity in tokens.
func (p *Pool) Tokens() int { return p.UsablePages() * p.pageSize }

// Available is the number of pages Reserve can still hand out: free pages
// plus unreferenced cached pages it would evict.
func (p *Pool) Available() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free) + p.cache.evictable
}

// OwnershipFailures counts failed ownership checks since the pool was made.
func (p *Pool) OwnershipFailures() uint64 { return p.failures.Load() }

// PagesFor is the number of pages that hold n tokens.
func (p *Pool) PagesFor(n int) int { return (n + p.pageSize - 1) / p.pageSize }

// NewTable returns an empty page table with an owner id no other table of
// this pool has had or will have, so a table can never pass as another's.
func (p *Pool) NewTable() *PageTable {
	return &PageTable{owner: Owner(p.owners.Add(1))}
}

// GrowTable makes room in t for the pages of tokens positions, so that
// Reserve does not regrow the table as a decoding sequence takes pages.
func (p *Pool) GrowTable(t *PageTable, tokens int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t.entries = slices.Grow(t.entries, max(0, p.PagesFor(tokens)-len(t.entries)))
}

// Reserve grows t until it covers tokens positions. It allocates all the
// pages it needs or none, returning ErrOutOfPages in the second case.
func (p *Pool) Reserve(t *PageTable, tokens int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	need := p.PagesFor(tokens) - len(t.entries)
	if need <= 0 {
		return nil
	}
	if need > len(p.free)+p.cache.evictable {
		return fmt.Errorf("kvcache: %d tokens need %d more pages, %d available: %w",
			tokens, need, len(p.free)+p.cache.evictable, ErrOutOfPages)
	}
	for range need {
		n := p.allocLocked()
		pg := &p.pages[n]
		pg.state, pg.owner, pg.written = stateOwned, t.owner, 0
		pg.epoch++
		t.entries = append(t.entries, Entry{Page: n, Epoch: pg.epoch})
	}
	return nil
}

// allocLocked pops a free page, evicting the least recently used cached page
// when the free list is empty. The caller has checked availability.
func (p *Pool) allocLocked() int32 {
	if len(p.free) == 0 {
		p.evictLocked(p.cache.lruHead)
	}
	n := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	return n
}

// Free releases every page t references and empties t. Owned pages return to
// the free list (or wait for their leases); shared pages lose one reference.
// Entries whose epoch no longer matches are skipped and counted as failures.
func (p *Pool) Free(t *PageTable) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range t.entries {
		if e.Page <= 0 || int(e.Page) >= len(p.pages) || p.pages[e.Page].epoch != e.Epoch {
			p.failures.Add(1)
			continue
		}
		pg := &p.pages[e.Page]
		switch {
		case pg.state == stateOwned && pg.owner == t.owner:
			pg.owner = 0
			if pg.leases > 0 {
				pg.state = stateOrphan
			} else {
				p.pushFreeLocked(e.Page)
			}
		case pg.state == stateShared:
			if !pg.holders.remove(t.owner) {
				p.failures.Add(1)
				continue
			}
			p.maybeEvictableLocked(e.Page)
		default:
			p.failures.Add(1)
		}
	}
	t.entries = t.entries[:0]
	t.cached, t.parent = 0, nil
}

// pushFreeLocked returns page n to the free list, poisoning it if configured.
func (p *Pool) pushFreeLocked(n int32) {
	pg := &p.pages[n]
	pg.state, pg.owner, pg.written, pg.holders, pg.entry = stateFree, 0, 0, holderSet{}, nil
	if p.cfg.PoisonFreed {
		p.poison(int(n))
	}
	p.free = append(p.free, n)
}

// poison fills page n of every layer with NaN so a read after free shows.
func (p *Pool) poison(n int) {
	const nanF16 = 0x7e00
	nan := float32(math.NaN())
	for l := range p.cfg.Layers {
		if p.cfg.DType == gguf.F16 {
			k, v := p.PageF16(l, n)
			for i := range k {
				k[i], v[i] = nanF16, nanF16
			}
		} else {
			k, v := p.PageF32(l, n)
			for i := range k {
				k[i], v[i] = nan, nan
			}
		}
	}
}
