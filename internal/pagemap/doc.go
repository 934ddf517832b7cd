// Package pagemap is the operator's live view of the KV cache: an
// http.Handler serving one self-contained page (/ui), a JSON snapshot
// (/ui/state) and a server-sent event stream of snapshots (/ui/events, five
// or more a second).
//
// The page draws each pool as a grid, one cell per physical page, coloured
// by state (free, owned and being written, owned and full, cached/shared,
// leased to a transfer, sentinel) and, for owned pages, by a stable colour
// per tenant. Beside it are the live requests per tenant with their phase,
// the recent aborts with their reason, and the server's counters.
//
// A snapshot is read-only: kvcache.Pool.PageInfos copies the page table
// under the pool lock without allocating, and engine.Status runs between two
// steps of the loop. A gateway has no pool; its view fetches each worker's
// /ui/state and shows them side by side.
//
// Tenant names appear here, so the handler belongs on the admin listener
// (until then, a loopback listener behind --ui-listen), never on the API.
package pagemap
