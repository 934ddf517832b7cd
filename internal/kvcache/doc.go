// Package kvcache is bulkhead's paged key/value store: a pool of fixed-size
// pages, the page tables that name them, the prefix cache that shares them,
// and the checks that keep one request from reading another's state.
//
// Engines do not zero pages between requests, so safety rests on ownership
// (DESIGN I2). Every allocation bumps the page's epoch and records its owner;
// a page table holds {Page, Epoch} entries, never bare page numbers; and the
// pool counts how many slots the owner has written. Before each forward step
// the engine calls [Pool.AppendStepPages], which checks every page the
// sequence will touch: the epoch must match and the page must be the
// sequence's own with the slots it reads already written, or a read-only
// prefix page the sequence holds a reference to. Page 0 is a sentinel that is
// never handed out. A failed check returns an [*OwnershipError] (matching
// [ErrOwnership]) and increments [Pool.OwnershipFailures]; the caller aborts
// the request and never emits a token for that step.
//
// Shared prefix pages are keyed by chained SHA-256 hashes seeded with a
// per-process random value and salted with the tenant (DESIGN I6); a hit also
// compares the block's token ids, its salt and its parent block, so even a
// hash collision cannot hand one tenant another's page. Operators may mark a
// prefix public with [Pool.MarkPublic]; only those blocks are shared across
// tenants. Unreferenced cached pages are evicted least recently used first.
//
// A page returns to the free list only when no page table references it and
// no transfer holds a lease on it ([Pool.Lease]). [Pool.CheckDrained] asserts
// accounting (DESIGN I7): once every request is gone, every page is free or an
// unreferenced cache page, and every reference and lease count is zero.
//
// A Pool is safe for concurrent use; the page memory returned by PageF16 and
// PageF32 is not locked and belongs to whoever holds the verified page table.
package kvcache
