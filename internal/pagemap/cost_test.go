package pagemap

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/chromedp/chromedp"
)

// The live view's cost to decode, as decode tok/s with a real chromium
// showing /ui against none. One browser runs throughout; a "none" round has
// it on about:blank (no event stream, no snapshots, nothing rendered), a
// "viewer" round on /ui. A third kind of round has the browser on
// about:blank and a Go client reading /ui/events: the server's share of the
// cost alone, what a browser on the operator's own machine costs (chromium
// beside the engine also takes CPU from it). Rounds alternate none, viewer,
// stream, none, viewer, stream… in one run, so load on a shared machine
// hits all alike, and the ratios are printed (go test -v). Nothing about
// time is asserted: a speed figure is only a same-run ratio.
// BULKHEAD_LONG=1 to run; BULKHEAD_VIEWER_COST_ROUNDS sets the rounds of
// each kind (default 8).
func TestDecodeCostOfAnAttachedViewer(t *testing.T) {
	if os.Getenv("BULKHEAD_LONG") != "1" {
		t.Skip("set BULKHEAD_LONG=1 to measure decode tok/s with and without a browser on the page map")
	}
	rounds := 8
	if s := os.Getenv("BULKHEAD_VIEWER_COST_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("BULKHEAD_VIEWER_COST_ROUNDS=%q: want a count of round pairs ≥ 1", s)
		}
		rounds = n
	}
	eng, _ := newEngine(t)
	srv := httptest.NewServer(New(Options{Sources: []Source{{Role: "serve", Engine: eng}}}))
	t.Cleanup(srv.Close)
	ctx := browser(t)

	// round decodes three waves of four requests of two tenants (13 pages
	// each, so the 64-page pool never preempts) and returns decode tok/s.
	round := func() float64 {
		start := time.Now()
		toks := 0
		for range 3 {
			var chans []<-chan engine.Event
			for i := range 4 {
				chans = append(chans, submit(t, eng, []string{"alice", "bob"}[i%2], int32(i), 200))
			}
			for _, ch := range chans {
				for ev := range ch {
					if ev.Err != nil {
						t.Fatal(ev.Err)
					}
					if ev.Finish == nil {
						toks++
					}
				}
			}
		}
		return float64(toks) / time.Since(start).Seconds()
	}
	updates := func() int {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`+(document.body.dataset.updates||0)`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	attach := func() {
		if _, err := chromedp.Run(ctx, chromedp.Navigate(srv.URL+"/ui")); err != nil {
			t.Fatal(err)
		}
		for updates() < 2 { // the event stream is open and drawing
			if _, err := chromedp.Run(ctx, chromedp.Sleep(20*time.Millisecond)); err != nil {
				t.Fatal(err)
			}
		}
	}
	detach := func() {
		if _, err := chromedp.Run(ctx, chromedp.Navigate("about:blank")); err != nil {
			t.Fatal(err)
		}
	}

	var streamed atomic.Int64
	// stream reads /ui/events as a remote browser would, without drawing.
	stream := func() context.CancelFunc {
		sctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(sctx, http.MethodGet, srv.URL+"/ui/events", nil)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "data: ") {
					streamed.Add(1)
				}
			}
		}()
		return cancel
	}

	detach()
	round() // warm-up
	var none, with, events []float64
	var drawn int
	var attached time.Duration
	for range rounds {
		none = append(none, round())
		attach()
		before, start := updates(), time.Now()
		with = append(with, round())
		drawn += updates() - before
		attached += time.Since(start)
		detach()
		cancel := stream()
		events = append(events, round())
		cancel()
	}
	mean := func(xs []float64) (m float64) {
		for _, x := range xs {
			m += x
		}
		return m / float64(len(xs))
	}
	// medianRatio is the median of the per-triple ratios xs[i]/none[i].
	medianRatio := func(xs []float64) float64 {
		r := make([]float64, len(xs))
		for i := range xs {
			r[i] = xs[i] / none[i]
		}
		slices.Sort(r)
		return r[len(r)/2]
	}
	t.Logf("decode tok/s per round, none:   %.0f", none)
	t.Logf("decode tok/s per round, viewer: %.0f", with)
	t.Logf("decode tok/s per round, stream: %.0f", events)
	t.Logf("decode tok/s: no viewer %.0f, chromium on /ui %.0f: ratio of means %.3f, median of the %d round ratios %.3f (alternated, same run)",
		mean(none), mean(with), mean(with)/mean(none), rounds, medianRatio(with))
	t.Logf("decode tok/s: no viewer %.0f, /ui/events read by a client, no browser drawing %.0f: ratio of means %.3f, median %.3f (server's share)",
		mean(none), mean(events), mean(events)/mean(none), medianRatio(events))
	t.Logf("the viewer drew %d snapshots in %.1fs of decode (%.1f/s); the stream client read %d", drawn, attached.Seconds(), float64(drawn)/attached.Seconds(), streamed.Load())
}
