package kvcache

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"slices"
)

// cacheEntry is one cached full block: its key, the block before it, the
// domain it belongs to (public or one tenant's salt), its tokens and page.
type cacheEntry struct {
	key        [32]byte
	parent     *cacheEntry
	public     bool
	salt       string
	tokens     []int32
	page       int32
	prev, next *cacheEntry // LRU links while evictable
	inLRU      bool
	// The entry lives in its page's slot, reused when the page is sealed
	// again: gen counts the uses, and parentGen is the parent's gen when
	// this block was sealed, so a block whose parent's slot has been
	// reused for another block no longer matches it.
	gen, parentGen uint64
}

// prefixCache maps block keys to entries and orders unreferenced entries
// least recently used first. The pool's mutex guards it.
type prefixCache struct {
	seed    [32]byte // per-process random value: keys are unguessable
	entries map[[32]byte]*cacheEntry
	// Preallocated so that sealing a page allocates nothing: a page is in
	// at most one entry at a time, so slots[n] is page n's entry and
	// blockTokens[n*PageSize:] its tokens. keyBuf is the hash input.
	slots            []cacheEntry
	blockTokens      []int32
	keyBuf           []byte
	lruHead, lruTail *cacheEntry
	evictable        int
	public           [][]int32
	// hashHook, when set by a test, rewrites every key (to force collisions).
	hashHook func([32]byte) [32]byte
}

// key is SHA-256(seed ‖ parent key ‖ domain ‖ tokens): chained, so a block's
// key covers every token before it, and salted, so tenants' keys differ.
// The input is built in keyBuf (the pool's mutex guards it) and hashed in
// one call, so a key costs no allocation.
func (c *prefixCache) key(parent *cacheEntry, public bool, salt string, block []int32) [32]byte {
	b := append(c.keyBuf[:0], c.seed[:]...)
	if parent != nil {
		b = append(b, parent.key[:]...)
	}
	if public {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b = binary.LittleEndian.AppendUint64(b, uint64(len(salt)))
		b = append(b, salt...)
	}
	for _, tok := range block {
		b = binary.LittleEndian.AppendUint32(b, uint32(tok))
	}
	c.keyBuf = b
	k := sha256.Sum256(b)
	if c.hashHook != nil {
		k = c.hashHook(k)
	}
	return k
}

// matches compares everything a key stands for, so a hash collision misses.
func (e *cacheEntry) matches(parent *cacheEntry, public bool, salt string, block []int32) bool {
	return e != nil && e.parent == parent && (parent == nil || e.parentGen == parent.gen) && e.public == public &&
		(public || e.salt == salt) && slices.Equal(e.tokens, block)
}

// MarkPublic lets every tenant share the cached blocks of prefix (whole
// blocks only). It is for operator-configured prompts such as a common
// system prompt; nothing else crosses tenants.
func (p *Pool) MarkPublic(prefix []int32) error {
	full := len(prefix) / p.pageSize * p.pageSize
	if full == 0 {
		return errors.New("kvcache: a public prefix needs at least one whole page of tokens")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cache.public = append(p.cache.public, slices.Clone(prefix[:full]))
	return nil
}

// publicBlocksLocked is how many leading whole blocks of tokens lie inside a
// public prefix.
func (p *Pool) publicBlocksLocked(tokens []int32) int {
	best := 0
	for _, pub := range p.cache.public {
		n := min(len(pub), len(tokens)) / p.pageSize
		i := 0
		for i < n && slices.Equal(pub[i*p.pageSize:(i+1)*p.pageSize], tokens[i*p.pageSize:(i+1)*p.pageSize]) {
			i++
		}
		best = max(best, i)
	}
	return best
}

// MatchPrefix fills the empty table t with the longest run of cached blocks
// that begins tokens in salt's domain, taking a reference on each, and
// returns how many tokens they cover. It leaves at least the last token
// uncovered, so the caller always has a token to run for logits.
func (p *Pool) MatchPrefix(t *PageTable, salt string, tokens []int32) (int, error) {
	if len(t.entries) != 0 {
		return 0, errors.New("kvcache: MatchPrefix needs an empty page table")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ps := p.pageSize
	limit := max(0, len(tokens)-1) / ps
	pub := p.publicBlocksLocked(tokens)
	var parent *cacheEntry
	for i := range limit {
		block := tokens[i*ps : (i+1)*ps]
		e := p.cache.entries[p.cache.key(parent, i < pub, salt, block)]
		if !e.matches(parent, i < pub, salt, block) {
			break
		}
		pg := &p.pages[e.page]
		if e.inLRU {
			p.lruRemoveLocked(e)
		}
		pg.holders.add(t.owner)
		t.entries = append(t.entries, Entry{Page: e.page, Epoch: pg.epoch})
		parent = e
	}
	t.cached, t.parent = len(t.entries), parent
	return len(t.entries) * ps, nil
}

// Cache seals t's full, written pages holding tokens (the sequence's tokens
// whose KV is committed) into the prefix cache under salt's domain. Sealed
// pages become read-only and shared; t keeps its reference. A block already
// cached from another page is left where it is.
func (p *Pool) Cache(t *PageTable, salt string, tokens []int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ps := p.pageSize
	full := min(len(tokens)/ps, len(t.entries))
	if t.cached >= full {
		return
	}
	pub := p.publicBlocksLocked(tokens)
	for i := t.cached; i < full; i++ {
		e := t.entries[i]
		pg := &p.pages[e.Page]
		if pg.epoch != e.Epoch || pg.state != stateOwned || pg.owner != t.owner || pg.written != int32(ps) {
			return
		}
		block := tokens[i*ps : (i+1)*ps]
		k := p.cache.key(t.parent, i < pub, salt, block)
		if old := p.cache.entries[k]; old != nil {
			if old.matches(t.parent, i < pub, salt, block) { // cached elsewhere already
				t.cached, t.parent = i+1, old
				continue
			}
			if !old.inLRU { // a colliding entry in use: leave ours uncached
				return
			}
			p.evictLocked(old)
		}
		ce := p.cache.slot(e.Page, p.pageSize)
		ce.key, ce.parent, ce.public, ce.page = k, t.parent, i < pub, e.Page
		ce.tokens = append(ce.tokens, block...)
		if t.parent != nil {
			ce.parentGen = t.parent.gen
		}
		if !ce.public {
			ce.salt = salt
		}
		p.cache.entries[k] = ce
		pg.state, pg.owner, pg.entry = stateShared, 0, ce
		pg.holders = holderSet{}
		pg.holders.add(t.owner)
		t.cached, t.parent = i+1, ce
	}
}

// slot returns page n's entry, emptied for a new block: its gen is bumped
// and its tokens point at the page's share of blockTokens, empty. The page
// is being sealed, so its previous entry was evicted (out of the map and
// the LRU list) when the page was freed.
func (c *prefixCache) slot(n int32, pageSize int) *cacheEntry {
	e := &c.slots[n]
	off := int(n) * pageSize
	*e = cacheEntry{gen: e.gen + 1, tokens: c.blockTokens[off : off : off+pageSize]}
	return e
}

// DropCache evicts every unreferenced cached page to the free list.
func (p *Pool) DropCache() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.cache.lruHead != nil {
		p.evictLocked(p.cache.lruHead)
	}
}

// maybeEvictableLocked puts shared page n at the most recently used end of
// the LRU list once nothing references or leases it.
func (p *Pool) maybeEvictableLocked(n int32) {
	pg := &p.pages[n]
	e := pg.entry
	if pg.state != stateShared || pg.holders.len() > 0 || pg.leases > 0 || e.inLRU {
		return
	}
	e.prev, e.next, e.inLRU = p.cache.lruTail, nil, true
	if p.cache.lruTail != nil {
		p.cache.lruTail.next = e
	} else {
		p.cache.lruHead = e
	}
	p.cache.lruTail = e
	p.cache.evictable++
}

func (p *Pool) lruRemoveLocked(e *cacheEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		p.cache.lruHead = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		p.cache.lruTail = e.prev
	}
	e.prev, e.next, e.inLRU = nil, nil, false
	p.cache.evictable--
}

// evictLocked drops an unreferenced entry from the cache and frees its page.
func (p *Pool) evictLocked(e *cacheEntry) {
	p.lruRemoveLocked(e)
	if p.cache.entries[e.key] == e {
		delete(p.cache.entries, e.key)
	}
	p.pushFreeLocked(e.page)
}
