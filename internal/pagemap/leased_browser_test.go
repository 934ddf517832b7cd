package pagemap

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/loader"
	"github.com/bulkhead-llm/bulkhead/internal/transfer"
	"github.com/bulkhead-llm/bulkhead/internal/worker"
	"github.com/chromedp/chromedp"
)

// prefillSummary is the prefill worker's page map read from the DOM.
type prefillSummary struct {
	Cells        int      `json:"cells"`
	Leased       []int    `json:"leased"` // indices of cells drawn leased
	Owned        int      `json:"owned"`
	States       []string `json:"states"` // every cell's state
	Transferring int      `json:"transferring"`
	Updates      int      `json:"updates"`
	LeasedColour string   `json:"leasedColour"` // computed outline of a leased cell
}

const summarizePrefill = `(() => {
  const cells=[...document.querySelectorAll('[data-pool="prefill"] .cell')];
  const leased=cells.filter(c=>c.dataset.leased==='true');
  return {cells:cells.length,
    leased:leased.map(c=>+c.dataset.i),
    owned:cells.filter(c=>c.dataset.state==='writing'||c.dataset.state==='written').length,
    states:cells.map(c=>c.dataset.state||''),
    transferring:document.querySelectorAll('[data-pool="prefill"] tr[data-phase=transferring]').length,
    updates:+(document.body.dataset.updates||0),
    leasedColour:leased.length?getComputedStyle(leased[0]).outlineColor:''}})()`

func prefillState(t *testing.T, ctx context.Context, ok func(prefillSummary) bool) prefillSummary {
	t.Helper()
	var s prefillSummary
	for {
		var err error
		if s, err = chromedp.Run(ctx, chromedp.Evaluate[prefillSummary](summarizePrefill)); err != nil {
			t.Fatalf("reading the prefill page map (last %+v): %v", s, err)
		}
		if ok(s) {
			return s
		}
		if _, err := chromedp.Run(ctx, chromedp.Sleep(50*time.Millisecond)); err != nil {
			t.Fatalf("waiting for the prefill page map (last %+v): %v", s, err)
		}
	}
}

// The disaggregated deployment — a real gateway, a prefill and a decode
// worker, KV over TCP — with the transfer held open at its DONE frame: the
// prefill worker's page map draws the request's pages as leased to the
// transfer while it is in flight, and as free (or cached, evictable) once
// decode acknowledged it.
func TestBrowserPrefillPagesShowLeasedWhileTheirTransferIsInFlight(t *testing.T) {
	gate := newGate()
	po := loader.PoolOptions{MaxContext: 512, KVTokens: 1024, PageSize: 16}
	pre := startWorker(t, worker.Prefill, po, engine.Config{}, &transfer.FaultTransport{Inner: transfer.TCP(), Fault: gate.fault})
	dec := startWorker(t, worker.Decode, po, engine.Config{}, nil)
	gw := startGateway(t, []*testWorker{pre}, []*testWorker{dec})
	t.Cleanup(gate.open) // a failing test must not leave the transfer held
	ctx := browser(t)
	if _, err := chromedp.Run(ctx, chromedp.Navigate(pre.ui.URL+"/ui")); err != nil {
		t.Fatal(err)
	}
	idle := prefillState(t, ctx, func(s prefillSummary) bool { return s.Cells == 65 && s.Updates >= 2 })
	if len(idle.Leased) != 0 || idle.Owned != 0 {
		t.Fatalf("idle prefill pool: %+v", idle)
	}

	gate.hold.Store(true)
	done := make(chan error, 1)
	go func() { done <- complete(gw, prompt("alice", 1, 100)) }() // 100 tokens: 7 pages
	select {
	case <-gate.held:
	case err := <-done:
		t.Fatalf("the request ended before its transfer was held: %v", err)
	}
	busy := prefillState(t, ctx, func(s prefillSummary) bool { return len(s.Leased) > 0 && s.Transferring == 1 })
	if len(busy.Leased) < 6 {
		t.Errorf("a 100-token prompt's transfer in flight, but only %d pages drawn leased: %+v", len(busy.Leased), busy)
	}
	if busy.LeasedColour != "rgb(232, 160, 0)" { // #e8a000, the legend's "leased to a transfer"
		t.Errorf("a leased page is outlined in %q", busy.LeasedColour)
	}
	full, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	saveShot(t, "pagemap-leased.png", full)

	gate.open()
	if err := <-done; err != nil {
		t.Fatalf("the request failed once its transfer was let through: %v", err)
	}
	after := prefillState(t, ctx, func(s prefillSummary) bool { return len(s.Leased) == 0 && s.Owned == 0 && s.Transferring == 0 })
	for _, i := range busy.Leased {
		if st := after.States[i]; st != "free" && st != "shared" {
			t.Errorf("page %d was leased; after the transfer it is %q, want free (or cached, evictable)", i, st)
		}
	}
	t.Logf("leased pages in flight %v; after: %v", busy.Leased, slices.Compact(slices.Sorted(slices.Values(after.States))))
}
