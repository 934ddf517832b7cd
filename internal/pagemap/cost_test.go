package pagemap

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
)

// The live view's cost to decode: the same engine decodes the same batch
// with no viewer and with an event-stream consumer attached, alternating
// rounds in one run so machine noise hits both alike. It reports the ratio;
// it asserts nothing about time (BULKHEAD_LONG=1 to run).
func TestDecodeCostOfAnAttachedViewer(t *testing.T) {
	if os.Getenv("BULKHEAD_LONG") != "1" {
		t.Skip("set BULKHEAD_LONG=1 to measure decode tok/s with and without a page-map viewer")
	}
	eng, _ := newEngine(t)
	srv := httptest.NewServer(New(Options{Sources: []Source{{Role: "serve", Engine: eng}}}))
	t.Cleanup(srv.Close)
	round := func() float64 {
		start := time.Now()
		var chans []<-chan engine.Event
		for i := range 4 {
			chans = append(chans, submit(t, eng, []string{"alice", "bob"}[i%2], int32(i), 480))
		}
		toks := 0
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
		return float64(toks) / time.Since(start).Seconds()
	}
	var events atomic.Int64
	attach := func() context.CancelFunc {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/ui/events", nil)
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
					events.Add(1)
				}
			}
		}()
		return cancel
	}
	round() // warm-up
	var none, with float64
	var attachedFor time.Duration
	const rounds = 8
	for range rounds {
		none += round()
		cancel := attach()
		start := time.Now()
		with += round()
		attachedFor += time.Since(start)
		cancel()
	}
	none, with = none/rounds, with/rounds
	t.Logf("decode tok/s: no viewer %.0f, viewer attached %.0f (ratio %.3f); viewer got %d events in %.1fs attached (%.1f/s)",
		none, with, with/none, events.Load(), attachedFor.Seconds(), float64(events.Load())/attachedFor.Seconds())
}
