package pagemap

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/loader"
	"github.com/bulkhead-llm/bulkhead/internal/transfer"
	"github.com/bulkhead-llm/bulkhead/internal/worker"
	"github.com/chromedp/chromedp"
)

const driftProblem = "max_context is 256, want 512"

// refusalScenario runs a gateway over a prefill worker, a small decode
// worker and a decode worker whose max context drifted (256, the others
// 512), and makes it refuse three requests: bob's while alice's transfer
// holds the small decode pool full (overload), alice's whose KV the
// decode worker rejects (rejected handoff), and, once the small decode
// worker is gone, bob's with only the drifted one left (drift). It returns
// the gateway's page map.
func refusalScenario(t *testing.T) *httptest.Server {
	t.Helper()
	gate := newGate()
	t.Cleanup(gate.open)
	pre := startWorker(t, worker.Prefill, loader.PoolOptions{MaxContext: 512, KVTokens: 1024, PageSize: 16}, engine.Config{},
		&transfer.FaultTransport{Inner: transfer.TCP(), Fault: gate.fault})
	// A pool of exactly one max-context request; a second waits 200 ms for
	// pages that cannot come while the first is held, then is overload.
	dec := startWorker(t, worker.Decode, loader.PoolOptions{MaxContext: 512, KVTokens: 512, PageSize: 16}, engine.Config{ReserveWait: 200 * time.Millisecond}, nil)
	drifted := startWorker(t, worker.Decode, loader.PoolOptions{MaxContext: 256, KVTokens: 1024, PageSize: 16}, engine.Config{}, nil)
	gw := startGateway(t, []*testWorker{pre}, []*testWorker{dec, drifted})
	ui := httptest.NewServer(New(Options{Gateway: gw, Workers: []string{pre.ui.URL, dec.ui.URL}}))
	t.Cleanup(ui.Close)

	gate.hold.Store(true)
	first := make(chan error, 1)
	go func() { first <- complete(gw, prompt("alice", 1, 480)) }()
	select {
	case <-gate.held:
	case err := <-first:
		t.Fatalf("alice's request ended before its transfer was held: %v", err)
	}
	var ol *engine.OverloadedError
	if err := complete(gw, prompt("bob", 2, 480)); !errors.As(err, &ol) {
		t.Fatalf("bob's request with the decode pool held full: %v, want overload", err)
	}
	gate.open()
	if err := <-first; err != nil {
		t.Fatalf("alice's held request: %v", err)
	}
	gate.corrupt.Store(true)
	if err := complete(gw, prompt("alice", 3, 100)); err == nil {
		t.Fatal("a request whose KV arrived corrupted succeeded")
	}
	gate.corrupt.Store(false)
	dec.api.Close()
	gw.Check(context.Background())
	if err := complete(gw, prompt("bob", 4, 50)); !errors.Is(err, engine.ErrShuttingDown) {
		t.Fatalf("bob's request with only the drifted decode worker left: %v", err)
	}
	return ui
}

// The gateway's /ui/state names each worker's health and drift state and
// lists its refusals with their reason.
func TestGatewayStateShowsDriftAndRefusals(t *testing.T) {
	ui := refusalScenario(t)
	resp, err := http.Get(ui.URL + "/ui/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st State
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.View != "gateway" || st.Gateway == nil || len(st.Gateway.Members) != 3 {
		t.Fatalf("gateway view: %+v", st)
	}
	for i, want := range []struct{ role, state, problem string }{
		{"prefill", "healthy", ""}, {"decode", "unreachable", "connection refused"}, {"decode", "drift", driftProblem},
	} {
		m := st.Gateway.Members[i]
		if string(m.Role) != want.role || m.State != want.state || !strings.Contains(m.Problem, want.problem) || (want.problem == "") != (m.Problem == "") {
			t.Errorf("worker %d: %s %s %q, want %s %s %q", i, m.Role, m.State, m.Problem, want.role, want.state, want.problem)
		}
	}
	got := st.Gateway.Refusals
	want := []struct{ tenant, reason, detail string }{
		{"bob", "overload", "no KV pages freed within 200ms"},
		{"alice", "rejected handoff", "KV transfer"},
		{"bob", "drift", driftProblem},
	}
	if len(got) != len(want) {
		t.Fatalf("refusals %+v, want %d", got, len(want))
	}
	for i, w := range want {
		if got[i].Tenant != w.tenant || got[i].Reason != w.reason || !strings.Contains(got[i].Detail, w.detail) || got[i].At.IsZero() {
			t.Errorf("refusal %d: %+v, want %s %q containing %q", i, got[i], w.tenant, w.reason, w.detail)
		}
	}
}

// The gateway page draws the same: the drifted worker's row says what
// drifted, and the refusals panel lists each refusal with its reason.
func TestBrowserGatewayPageShowsDriftAndRefusals(t *testing.T) {
	ui := refusalScenario(t)
	ctx := browser(t)
	if _, err := chromedp.Run(ctx, chromedp.Navigate(ui.URL+"/ui")); err != nil {
		t.Fatal(err)
	}
	type view struct {
		Drift    string   `json:"drift"`
		Healthy  int      `json:"healthy"`
		Reasons  []string `json:"reasons"`
		Tenants  []string `json:"tenants"`
		BadClass bool     `json:"badClass"`
	}
	const read = `(() => {
	  const q=s=>[...document.querySelectorAll(s)];
	  const d=q('#members tr[data-state=drift]')[0];
	  const rows=q('#refusals tr[data-reason]');
	  return {drift:d?d.children[2].textContent:'', badClass:!!d&&d.children[2].className==='bad',
	    healthy:q('#members tr[data-state=healthy]').length,
	    reasons:rows.map(r=>r.dataset.reason), tenants:rows.map(r=>r.children[1].textContent)}})()`
	var v view
	for {
		var err error
		if v, err = chromedp.Run(ctx, chromedp.Evaluate[view](read)); err != nil {
			t.Fatalf("reading the gateway page (last %+v): %v", v, err)
		}
		if len(v.Reasons) == 3 {
			break
		}
		if _, err := chromedp.Run(ctx, chromedp.Sleep(50*time.Millisecond)); err != nil {
			t.Fatalf("waiting for the gateway page (last %+v): %v", v, err)
		}
	}
	full, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	saveShot(t, "pagemap-gateway-drift.png", full)
	if v.Drift != "drift: "+driftProblem || !v.BadClass || v.Healthy != 1 {
		t.Errorf("drifted worker drawn as %+v", v)
	}
	// Newest first.
	if strings.Join(v.Reasons, ",") != "drift,rejected handoff,overload" || strings.Join(v.Tenants, ",") != "bob,alice,bob" {
		t.Errorf("refusals panel: %+v", v)
	}
}
