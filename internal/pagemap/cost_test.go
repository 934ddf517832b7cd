package pagemap

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
)

// The live view's cost to decode, as decode tok/s with a real chromium
// showing /ui against none. Three kinds of round alternate in one run —
// none, viewer, stream, none, viewer, stream… — so load on a shared machine
// hits all alike:
//
//   - none: nothing attached;
//   - viewer: a headless chromium process opened on /ui before the round and
//     killed after it, driven by nothing (chromedp's DevTools traffic would
//     land in this process and be counted as the view's cost);
//   - stream: a Go client reading /ui/events, the server's share of the cost
//     alone (a browser on the operator's own machine costs the server this;
//     chromium beside the engine also takes CPU from it).
//
// It prints the tok/s ratios, this process's CPU time per kind and the CPU
// time of one snapshot (go test -v). Nothing about time is asserted: a speed
// figure is only a same-run ratio. BULKHEAD_LONG=1 to run;
// BULKHEAD_VIEWER_COST_ROUNDS sets the rounds of each kind (default 8).
func TestDecodeCostOfAnAttachedViewer(t *testing.T) {
	if os.Getenv("BULKHEAD_LONG") != "1" {
		t.Skip("set BULKHEAD_LONG=1 to measure decode tok/s with and without a browser on the page map")
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (apt-get install -y chromium; .ci/run does this): the viewer-cost measurement needs it")
	}
	rounds := 8
	if s := os.Getenv("BULKHEAD_VIEWER_COST_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("BULKHEAD_VIEWER_COST_ROUNDS=%q: want a count of rounds ≥ 1", s)
		}
		rounds = n
	}
	eng, _ := newEngine(t)
	h := New(Options{Sources: []Source{{Role: "serve", Engine: eng}}})
	perSnapshot := snapshotCPU(t, h)
	var sent, pageLoads atomic.Int64 // snapshots sent on /ui/events; loads of /ui
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ui" {
			pageLoads.Add(1)
		}
		h.ServeHTTP(countingWriter{w, &sent}, r)
	}))
	t.Cleanup(srv.Close)

	var cpu []time.Duration // this process's CPU time per round, in round order
	// round decodes three waves of four requests of two tenants (13 pages
	// each, so the 64-page pool never preempts) and returns decode tok/s.
	round := func() float64 {
		start, cpu0 := time.Now(), processCPU(t)
		defer func() { cpu = append(cpu, processCPU(t)-cpu0) }()
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
	// openBrowser starts chromium on /ui and returns once the page has
	// received a few snapshots (so its start-up is not in the round).
	openBrowser := func() (stop func()) {
		cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
			"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir="+t.TempDir(), srv.URL+"/ui")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its renderers go with it
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stop = func() {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
		}
		loads, from := pageLoads.Load(), sent.Load()
		for deadline := time.Now().Add(time.Minute); pageLoads.Load() == loads || sent.Load() < from+3; {
			if time.Now().After(deadline) { // a hung browser, not a speed check
				stop()
				t.Fatal("chromium did not open /ui and its event stream within a minute")
			}
			time.Sleep(20 * time.Millisecond)
		}
		return stop
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

	round() // warm-up
	var none, with, events []float64
	var toBrowser int64
	var attached time.Duration
	for range rounds {
		none = append(none, round())
		stop := openBrowser()
		before, start := sent.Load(), time.Now()
		with = append(with, round())
		toBrowser += sent.Load() - before
		attached += time.Since(start)
		stop()
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
	// medianRatio is the median of the per-round ratios xs[i]/none[i].
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
	// CPU time per token depends less than tok/s on how much of the machine
	// others take. Rounds decode the same tokens; round 0 was the warm-up.
	perKind := func(k int) (sum time.Duration) {
		for i := range rounds {
			sum += cpu[1+3*i+k]
		}
		return sum
	}
	c0, c1, c2 := perKind(0), perKind(1), perKind(2)
	t.Logf("this process's CPU time over the rounds: no viewer %.2fs, chromium on /ui %.2fs (ratio %.3f), /ui/events client %.2fs (ratio %.3f)",
		c0.Seconds(), c1.Seconds(), c1.Seconds()/c0.Seconds(), c2.Seconds(), c2.Seconds()/c0.Seconds())
	rate := float64(toBrowser) / attached.Seconds()
	t.Logf("chromium was sent %d snapshots in %.1fs of decode (%.1f/s); the stream client read %d",
		toBrowser, attached.Seconds(), rate, streamed.Load())
	t.Logf("one snapshot takes %v of CPU with the engine idle: at %.1f/s, %.3f%% of one core",
		perSnapshot, rate, 100*rate*perSnapshot.Seconds())
}

// countingWriter counts the snapshots an event stream sends.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c countingWriter) Write(b []byte) (int, error) {
	if strings.HasPrefix(string(b), "data: ") {
		c.n.Add(1)
	}
	return c.ResponseWriter.Write(b)
}

func (c countingWriter) Flush() { c.ResponseWriter.(http.Flusher).Flush() }

// snapshotCPU is the CPU time one fresh snapshot (engine status, page table,
// JSON) takes, measured over 200 of them with the engine idle and nothing
// else running in this process yet.
func snapshotCPU(t *testing.T, h *Handler) time.Duration {
	const n = 200
	start := processCPU(t)
	for range n {
		h.mu.Lock()
		h.last = nil // no sharing: every call builds a snapshot
		h.mu.Unlock()
		if _, err := h.snapshot(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return (processCPU(t) - start) / n
}

// processCPU is the user and system time this process has used.
func processCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
