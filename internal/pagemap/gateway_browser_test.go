package pagemap

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/chromedp/chromedp"
)

// gatewaySummary is the gateway view read from the DOM.
type gatewaySummary struct {
	Pools      int  `json:"pools"`
	Leased     int  `json:"leased"`    // prefill pages leased to a transfer
	Incoming   int  `json:"incoming"`  // decode pages owned by bob, KV arriving
	Owned      int  `json:"owned"`     // owned pages on both workers
	Unhealthy  bool `json:"unhealthy"` // the dead worker is flagged
	Rejected   bool `json:"rejected"`  // the decode side lists a rejected handoff
	Updates    int  `json:"updates"`
	PrefillBob int  `json:"prefillBob"`
}

const summarizeGateway = `(() => {
  const q=s=>[...document.querySelectorAll(s)];
  const pre=q('[data-pool$=":prefill"] .cell'), dec=q('[data-pool$=":decode"] .cell');
  const owned=c=>c.dataset.state==='writing'||c.dataset.state==='written';
  return {pools:q('[data-pool]').length,
    leased:pre.filter(c=>c.dataset.leased==='true').length,
    incoming:dec.filter(c=>owned(c)&&c.dataset.tenant==='bob').length,
    owned:pre.concat(dec).filter(owned).length,
    unhealthy:q('h2.bad').some(h=>h.textContent.includes('unhealthy')),
    rejected:q('[data-pool$=":decode"] td').some(td=>td.textContent==='rejected handoff'),
    updates:+(document.body.dataset.updates||0),
    prefillBob:pre.filter(c=>c.dataset.tenant==='bob').length}})()`

func gatewayState(t *testing.T, ctx context.Context, ok func(gatewaySummary) bool) gatewaySummary {
	t.Helper()
	var s gatewaySummary
	for {
		var err error
		if s, err = chromedp.Run(ctx, chromedp.Evaluate[gatewaySummary](summarizeGateway)); err != nil {
			t.Fatalf("reading the gateway view (last %+v): %v", s, err)
		}
		if ok(s) {
			return s
		}
		if _, err := chromedp.Run(ctx, chromedp.Sleep(50e6)); err != nil {
			t.Fatalf("waiting for the gateway view (last %+v): %v", s, err)
		}
	}
}

// A prompt of n tokens for tenant.
func longRequest(tenant string, n int) engine.Request {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(200 + i)
	}
	return engine.Request{ID: tenant, Tenant: tenant, CacheSalt: []byte(tenant), Prompt: p, MaxTokens: 4}
}

// The gateway view shows its workers side by side: the prefill worker's
// pages leased to a transfer, the decode worker's pages reserved for the
// incoming KV, a dead worker flagged, and, once the transfer is abandoned,
// the rejected handoff among the aborts and every page released.
func TestBrowserGatewayViewShowsWorkersAndLeasedPages(t *testing.T) {
	pre, _ := newEngine(t)
	dec, _ := newEngine(t)
	preSrv := httptest.NewServer(New(Options{Sources: []Source{{Role: "prefill", Engine: pre}}}))
	decSrv := httptest.NewServer(New(Options{Sources: []Source{{Role: "decode", Engine: dec}}}))
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	gw := httptest.NewServer(New(Options{Workers: []string{preSrv.URL, decSrv.URL, dead.URL}}))
	for _, s := range []*httptest.Server{preSrv, decSrv, gw} {
		t.Cleanup(s.Close)
	}
	ctx := browser(t)

	h, err := pre.Prefill(context.Background(), longRequest("alice", 60))
	if err != nil {
		t.Fatal(err)
	}
	res, err := dec.Reserve(context.Background(), longRequest("bob", 60))
	if err != nil {
		h.Release(err)
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Navigate(gw.URL+"/ui")); err != nil {
		t.Fatal(err)
	}
	busy := gatewayState(t, ctx, func(s gatewaySummary) bool { return s.Leased >= 3 && s.Incoming >= 3 && s.Unhealthy })
	if busy.PrefillBob != 0 {
		t.Fatalf("bob's tenant colour on the prefill worker, which holds only alice's pages: %+v", busy)
	}
	full, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	saveShot(t, "pagemap-gateway.png", full)

	transferErr := errors.New("test: transfer abandoned")
	h.Release(transferErr)
	res.Done(transferErr)
	drain(res.Events)
	after := gatewayState(t, ctx, func(s gatewaySummary) bool { return s.Leased == 0 && s.Owned == 0 && s.Rejected })
	t.Logf("busy %+v, after %+v", busy, after)
}
