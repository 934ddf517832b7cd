package pagemap

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/kvcache"
)

// State is one snapshot as /ui/state and /ui/events send it.
type State struct {
	Time     time.Time          `json:"time"`
	View     string             `json:"view"` // "engine" or "gateway"
	Pools    []PoolState        `json:"pools,omitempty"`
	Workers  []WorkerState      `json:"workers,omitempty"`
	Gateway  *GatewayState      `json:"gateway,omitempty"`
	Counters map[string]float64 `json:"counters"`
}

// PoolState is one engine's pool, its requests and its aborts.
type PoolState struct {
	Role     string `json:"role"`
	PageSize int    `json:"pageSize"`
	// Tenants names the tenants Pages refers to by index.
	Tenants []string `json:"tenants"`
	// Pages holds one row per physical page, sentinel first:
	// [state, tenant index or -1, owner, epoch, written, refs, leases].
	// State is the kvcache.PageState number; see StateNames.
	Pages      [][7]int64           `json:"pages"`
	StateNames []string             `json:"stateNames"`
	Requests   []engine.RequestInfo `json:"requests"`
	Aborts     []engine.AbortInfo   `json:"aborts"`
	Stats      engine.Stats         `json:"stats"`
}

// WorkerState is one worker as the gateway view shows it.
type WorkerState struct {
	URL     string `json:"url"`
	Healthy bool   `json:"healthy"`
	Error   string `json:"error,omitempty"`
	State   *State `json:"state,omitempty"`
}

var stateNames = func() []string {
	var s []string
	for i := kvcache.PageSentinel; i <= kvcache.PageOrphan; i++ {
		s = append(s, i.String())
	}
	return s
}()

// poolState snapshots one source. buf is reused across snapshots.
func poolState(ctx context.Context, src Source, buf []kvcache.PageInfo) (PoolState, []kvcache.PageInfo, error) {
	st, err := src.Engine.Status(ctx)
	if err != nil {
		return PoolState{}, buf, err
	}
	pool := src.Engine.Pool()
	buf = pool.PageInfos(buf[:0])
	ps := PoolState{Role: src.Role, PageSize: pool.PageSize(), StateNames: stateNames,
		Requests: st.Requests, Aborts: st.Aborts, Stats: st.Stats, Pages: make([][7]int64, len(buf))}
	if ps.Requests == nil {
		ps.Requests = []engine.RequestInfo{}
	}
	if ps.Aborts == nil {
		ps.Aborts = []engine.AbortInfo{}
	}
	tenantOf := map[kvcache.Owner]int{}
	index := map[string]int{}
	for _, r := range st.Requests {
		i, ok := index[r.Tenant]
		if !ok {
			i = len(ps.Tenants)
			index[r.Tenant] = i
			ps.Tenants = append(ps.Tenants, r.Tenant)
		}
		tenantOf[r.Owner] = i
	}
	for i, in := range buf {
		t, ok := tenantOf[in.Owner]
		if !ok || in.Owner == 0 {
			t = -1
		}
		ps.Pages[i] = [7]int64{int64(in.State), int64(t), int64(in.Owner), int64(in.Epoch), int64(in.Written), int64(in.Refs), int64(in.Leases)}
	}
	if ps.Tenants == nil {
		ps.Tenants = []string{}
	}
	return ps, buf, nil
}

// scrape runs a /metrics handler in process and keeps every sample that is
// not a histogram bucket, keyed by its name and labels as /metrics prints
// them: the page shows the same counters an operator scrapes.
func scrape(h http.Handler, into map[string]float64) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	sc := bufio.NewScanner(bytes.NewReader(rec.Body.Bytes()))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || strings.Contains(line, "_bucket{") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			into[line[:i]] = v
		}
	}
}
