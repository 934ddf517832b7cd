package kvcache

// Entry names one page of a sequence: the physical page and the epoch it had
// when the sequence got it. A page reallocated since then has a newer epoch,
// so a stale entry cannot pass the ownership check.
type Entry struct {
	Page  int32
	Epoch uint64
}

// PageTable maps a sequence's logical pages to physical pages: position i
// lives in entry i/PageSize, slot i%PageSize. Only the pool edits it.
type PageTable struct {
	owner   Owner
	entries []Entry
	// cached leading entries are sealed in (or matched from) the prefix
	// cache; parent is the cache entry of the last of them.
	cached int
	parent *cacheEntry
}

// Owner is the table's unique owner id, as recorded on its pages.
func (t *PageTable) Owner() Owner { return t.owner }

// Len is the number of pages in the table.
func (t *PageTable) Len() int { return len(t.entries) }

// Entry returns the i-th entry.
func (t *PageTable) Entry(i int) Entry { return t.entries[i] }

// Cached is the number of leading pages whose blocks are in the prefix cache.
func (t *PageTable) Cached() int { return t.cached }
