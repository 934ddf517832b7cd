package pagemap

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/kvcache"
)

func getState(t *testing.T, url string) State {
	t.Helper()
	resp, err := http.Get(url + "/ui/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st State
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

func countState(ps PoolState, s kvcache.PageState) int {
	n := 0
	for _, r := range ps.Pages {
		if kvcache.PageState(r[0]) == s {
			n++
		}
	}
	return n
}

func TestStateShowsTenantsPagesWhileRunningAndFreeAfter(t *testing.T) {
	eng, fwd := newEngine(t)
	srv := httptest.NewServer(New(Options{Sources: []Source{{Role: "serve", Engine: eng}}}))
	defer srv.Close()
	st := getState(t, srv.URL)
	if len(st.Pools) != 1 || len(st.Pools[0].Pages) != 65 || kvcache.PageState(st.Pools[0].Pages[0][0]) != kvcache.PageSentinel {
		t.Fatalf("want one pool of sentinel + 64 pages, got %+v", st.Pools)
	}
	fwd.pace.Store(true)
	a, b := submit(t, eng, "alice", 1, 200), submit(t, eng, "bob", 2, 200)
	var seen PoolState
	var ps PoolState
	for range 500 { // until both tenants own pages
		time.Sleep(20 * time.Millisecond)
		ps = getState(t, srv.URL).Pools[0]
		if len(ps.Tenants) == 2 && countState(ps, kvcache.PageWritten)+countState(ps, kvcache.PageWriting) >= 2 {
			seen = ps
			break
		}
	}
	if seen.Pages == nil {
		t.Fatalf("never saw both tenants' pages owned; last: tenants %v requests %+v", ps.Tenants, ps.Requests)
	}
	owners := map[string]bool{}
	for _, r := range seen.Pages {
		if r[1] >= 0 {
			owners[seen.Tenants[r[1]]] = true
		}
	}
	if !owners["alice"] || !owners["bob"] {
		t.Fatalf("pages not attributed to both tenants: %v", owners)
	}
	fwd.pace.Store(false)
	for _, ch := range []<-chan engine.Event{a, b} {
		if ev := drain(ch); ev.Err != nil {
			t.Fatal(ev.Err)
		}
	}
	time.Sleep(150 * time.Millisecond) // past the shared snapshot's lifetime
	ps = getState(t, srv.URL).Pools[0]
	t.Logf("after drain: free %d shared %d", countState(ps, kvcache.PageFree), countState(ps, kvcache.PageShared))
	// Full pages of a finished request stay in the tenant's prefix cache,
	// held by nobody (evictable); everything else is free.
	for i, r := range ps.Pages[1:] {
		st := kvcache.PageState(r[0])
		if !(st == kvcache.PageFree || st == kvcache.PageShared && r[5] == 0) || r[6] != 0 {
			t.Fatalf("after drain page %d: %v refs %d leases %d", i+1, st, r[5], r[6])
		}
	}
	if len(ps.Requests) != 0 || countState(ps, kvcache.PageFree) == 0 {
		t.Fatalf("after drain: %d requests, %d free", len(ps.Requests), countState(ps, kvcache.PageFree))
	}
}

func TestEventsStreamSnapshots(t *testing.T) {
	eng, _ := newEngine(t)
	srv := httptest.NewServer(New(Options{Sources: []Source{{Role: "serve", Engine: eng}}}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/ui/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	events := 0
	for events < 3 && sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var st State
			if err := json.Unmarshal([]byte(data), &st); err != nil || len(st.Pools) != 1 {
				t.Fatalf("event %d: %v %q", events, err, data[:min(len(data), 80)])
			}
			events++
		}
	}
	if events != 3 {
		t.Fatalf("got %d events: %v", events, sc.Err())
	}
}

func TestGatewayViewShowsWorkersAndUnhealthyOnes(t *testing.T) {
	eng, _ := newEngine(t)
	worker := httptest.NewServer(New(Options{Sources: []Source{{Role: "decode", Engine: eng}}}))
	defer worker.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	gw := httptest.NewServer(New(Options{Workers: []string{worker.URL, dead.URL}}))
	defer gw.Close()
	st := getState(t, gw.URL)
	if st.View != "gateway" || len(st.Workers) != 2 {
		t.Fatalf("gateway view: %+v", st)
	}
	if w := st.Workers[0]; !w.Healthy || w.State == nil || w.State.Pools[0].Role != "decode" {
		t.Fatalf("live worker: %+v", w)
	}
	if w := st.Workers[1]; w.Healthy || w.Error == "" {
		t.Fatalf("dead worker shown healthy: %+v", w)
	}
}

func TestPageIsSelfContained(t *testing.T) {
	for _, bad := range []string{"http://", "https://", "//cdn", "<script src", "<link"} {
		if strings.Contains(string(page), bad) {
			t.Errorf("page references %q: it must load nothing from elsewhere", bad)
		}
	}
}
