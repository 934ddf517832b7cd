package pagemap

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/chromedp/chromedp"
)

// browser starts Debian's chromium headless with a fresh profile, or skips
// the test when it is not installed (.ci/run installs it).
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (apt-get install -y chromium; .ci/run does this): the page map's browser test needs it")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1100, 700),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 2*time.Minute) // a hung browser, not a speed check
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	return ctx
}

// cellSummary is what the page shows, read from the rendered DOM.
type cellSummary struct {
	Cells   int               `json:"cells"`
	Free    int               `json:"free"`
	Owned   int               `json:"owned"`
	Colours map[string]string `json:"colours"` // tenant -> computed background of one of its cells
	Painted map[string]int    `json:"painted"` // tenant -> cells drawn in its colour
	Updates int               `json:"updates"`
}

const summarize = `(() => {
  const cells=[...document.querySelectorAll('[data-pool="serve"] .cell')];
  const s={cells:cells.length,free:0,owned:0,colours:{},painted:{},updates:+(document.body.dataset.updates||0)};
  for(const c of cells){
    if(c.dataset.state==='free')s.free++;
    if(c.dataset.state==='writing'||c.dataset.state==='written'){s.owned++;if(c.dataset.tenant)s.colours[c.dataset.tenant]=getComputedStyle(c).backgroundColor}
    if(c.dataset.tenant&&c.style.background)s.painted[c.dataset.tenant]=(s.painted[c.dataset.tenant]||0)+1
  }
  return s})()`

// hover moves the pointer onto an owned page and returns the tooltip.
const hover = `(() => {
  const c=document.querySelector('[data-pool="serve"] .cell[data-state=written],[data-pool="serve"] .cell[data-state=writing]');
  const r=c.getBoundingClientRect();
  c.dispatchEvent(new MouseEvent('mouseover',{bubbles:true,clientX:r.x+3,clientY:r.y+3}));
  c.dispatchEvent(new MouseEvent('mousemove',{bubbles:true,clientX:r.x+3,clientY:r.y+3}));
  return document.getElementById('tip').textContent})()`

// summary polls the DOM until ok holds (or the browser context ends).
func summary(t *testing.T, ctx context.Context, ok func(cellSummary) bool) cellSummary {
	t.Helper()
	var s cellSummary
	for {
		var err error
		if s, err = chromedp.Run(ctx, chromedp.Evaluate[cellSummary](summarize)); err != nil {
			t.Fatalf("reading the page map (last %+v): %v", s, err)
		}
		if os.Getenv("PM_DEBUG") != "" {
			t.Logf("%+v", s)
		}
		if ok(s) {
			return s
		}
		if _, err := chromedp.Run(ctx, chromedp.Sleep(50*time.Millisecond)); err != nil {
			t.Fatalf("waiting for the page map (last %+v): %v", s, err)
		}
	}
}

// screenshot captures the serve pool's grid and counts its pixels near each
// of colours (CSS "rgb(r, g, b)"). Near, not equal: a tenant's colour is an
// hsl() the page sets, and the rounding from the computed rgb() to the
// rasterised pixel belongs to chromium's build, not to us. The tolerance is far
// below the distance between any tenant colour and a free page's grey.
// top lists the screenshot's most common colours, for a failure message.
func screenshot(t *testing.T, ctx context.Context, colours ...string) (counts map[string]int, top string) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(`[data-pool="serve"] .grid`)))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	want := make([][3]int, len(colours))
	for i, c := range colours {
		if _, err := fmt.Sscanf(c, "rgb(%d, %d, %d)", &want[i][0], &want[i][1], &want[i][2]); err != nil {
			t.Fatalf("colour %q: %v", c, err)
		}
	}
	const tolerance = 4 // per channel, of 255
	near := func(a, b int) bool { return a-b <= tolerance && b-a <= tolerance }
	counts = map[string]int{}
	seen := map[[3]int]int{}
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			px := [3]int{int(r >> 8), int(g >> 8), int(b >> 8)}
			seen[px]++
			for i, w := range want {
				if near(px[0], w[0]) && near(px[1], w[1]) && near(px[2], w[2]) {
					counts[colours[i]]++
				}
			}
		}
	}
	type kv struct {
		px [3]int
		n  int
	}
	var all []kv
	for px, n := range seen {
		all = append(all, kv{px, n})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n })
	var sb strings.Builder
	for i := 0; i < len(all) && i < 6; i++ {
		fmt.Fprintf(&sb, " rgb(%d, %d, %d)×%d", all[i].px[0], all[i].px[1], all[i].px[2], all[i].n)
	}
	return counts, fmt.Sprintf("%dx%d px, most common:%s", bounds.Dx(), bounds.Dy(), sb.String())
}

// saveShot keeps a screenshot under docs/ when BULKHEAD_DOC_SHOTS=1 (to
// refresh the ones the docs show), else in the test's temp dir.
func saveShot(t *testing.T, name string, buf []byte) {
	dir := t.TempDir()
	if os.Getenv("BULKHEAD_DOC_SHOTS") == "1" {
		dir = "../../docs"
	}
	if err := os.WriteFile(filepath.Join(dir, name), buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestBrowserPagesChangeColourWhileRequestsRunAndFreeAfter(t *testing.T) {
	eng, fwd := newEngine(t)
	srv := httptest.NewServer(New(Options{Sources: []Source{{Role: "serve", Engine: eng}}}))
	t.Cleanup(srv.Close) // after the browser's cleanup, which ends its event stream
	ctx := browser(t)
	if _, err := chromedp.Run(ctx, chromedp.Navigate(srv.URL+"/ui")); err != nil {
		t.Fatal(err)
	}
	idle := summary(t, ctx, func(s cellSummary) bool { return s.Cells == 65 && s.Updates >= 2 })
	if idle.Free != 64 || idle.Owned != 0 {
		t.Fatalf("idle pool: %+v", idle)
	}

	fwd.pace.Store(true)
	a, b := submit(t, eng, "alice", 1, 300), submit(t, eng, "bob", 2, 300)
	// Wait for three cells in each tenant's colour (the page being written and
	// full pages sealed in the prefix cache): each has a 2px border, leaving an
	// 8×8 interior of the colour whose antialiased edges depend on where the
	// layout puts the cell, so one cell alone is too close to the threshold.
	busy := summary(t, ctx, func(s cellSummary) bool {
		return len(s.Colours) == 2 && s.Painted["alice"] >= 3 && s.Painted["bob"] >= 3
	})
	if busy.Colours["alice"] == busy.Colours["bob"] {
		t.Fatalf("both tenants drawn in %s", busy.Colours["alice"])
	}
	before := summary(t, ctx, func(cellSummary) bool { return true }).Updates
	counts, top := screenshot(t, ctx, busy.Colours["alice"], busy.Colours["bob"])
	tip, err := chromedp.Run(ctx, chromedp.Evaluate[string](hover))
	if err != nil || !strings.Contains(tip, "epoch ") || !strings.Contains(tip, "written slots ") || !strings.Contains(tip, "tenant ") || !strings.Contains(tip, "leases ") {
		t.Errorf("hovering an owned page shows %q (%v)", tip, err)
	}
	full, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	saveShot(t, "pagemap-serve.png", full)
	for tenant, c := range busy.Colours {
		if counts[c] < 100 { // three cells' 8×8 interiors are 192 pixels
			t.Errorf("screenshot has %d pixels near %s's colour %s (%s; page read %+v)", counts[c], tenant, c, top, busy)
		}
	}
	// Live: the page keeps receiving snapshots while requests run.
	summary(t, ctx, func(s cellSummary) bool { return s.Updates >= before+3 })

	fwd.pace.Store(false)
	for _, ch := range []<-chan engine.Event{a, b} {
		if ev := drain(ch); ev.Err != nil {
			t.Fatal(ev.Err)
		}
	}
	// For a snapshot or two after a request's stream has closed, the pages it
	// sealed into the prefix cache can still show its reference, drawn in the
	// tenant's colour (CI under -race read 18 such cells per tenant with no
	// page owned). Wait until no page is drawn in a tenant's colour.
	after := summary(t, ctx, func(s cellSummary) bool { return s.Owned == 0 && len(s.Painted) == 0 })
	if after.Free == 0 {
		t.Fatalf("no free page after the requests ended: %+v", after)
	}
	counts, top = screenshot(t, ctx, busy.Colours["alice"], busy.Colours["bob"])
	for tenant, c := range busy.Colours {
		if counts[c] != 0 {
			t.Errorf("after the requests ended the screenshot still has %d pixels near %s's colour %s (%s; page read %+v)", counts[c], tenant, c, top, after)
		}
	}
}
