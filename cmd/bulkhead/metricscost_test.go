package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// With no interval configured the EPP scrapes every endpoint every 50 ms
// (/work/shared/k8s/README.md, "Timing"), so /metrics must cost decode
// little. This runs serve's decode loop in alternating windows, with a
// 20/s scraper of the admin /metrics and without, in the same run, and
// reports the tok/s ratio (a same-run ratio on a shared machine, not an
// absolute figure). BULKHEAD_LONG=1 only: it takes about a minute.
func TestMetricsScrapeCostOnDecode(t *testing.T) {
	if os.Getenv("BULKHEAD_LONG") != "1" {
		t.Skip("BULKHEAD_LONG=1 runs the /metrics cost measurement (about a minute)")
	}
	base, admin, _ := startServeAdmin(t)
	body := `{"prompt":"` + strings.Repeat("metrics cost ", 20) + `","max_tokens":200,"temperature":0,"ignore_eos":true}`
	decode := func(window time.Duration) float64 {
		start := time.Now()
		tokens := 0
		for time.Since(start) < window {
			resp, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			var b struct {
				Usage struct {
					Completion int `json:"completion_tokens"`
				} `json:"usage"`
			}
			err = json.NewDecoder(resp.Body).Decode(&b)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("completion: %d %v", resp.StatusCode, err)
			}
			tokens += b.Usage.Completion
		}
		return float64(tokens) / time.Since(start).Seconds()
	}
	var scrapes, bytes atomic.Int64
	scrape := func(stop <-chan struct{}) {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				resp, err := http.Get(admin + "/metrics")
				if err != nil || resp.StatusCode != 200 {
					t.Errorf("scrape: %v", err)
					return
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				scrapes.Add(1)
				bytes.Add(n)
			}
		}
	}
	// CPU per scrape, idle: what 20/s costs in core-seconds per second.
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	c0 := cpu()
	for range 200 {
		resp, err := http.Get(admin + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	perScrape := (cpu() - c0) / 200

	decode(2 * time.Second) // warm up
	// Adjacent windows form a pair, so slow drift of the shared machine's
	// load cancels; the order alternates within pairs.
	const pairs, window = 20, 1500 * time.Millisecond
	var ratios []float64
	var scrapedTime time.Duration
	for i := range pairs {
		run := func(withScraper bool) float64 {
			if !withScraper {
				return decode(window)
			}
			stop := make(chan struct{})
			start := time.Now()
			go scrape(stop)
			defer func() { close(stop); scrapedTime += time.Since(start) }()
			return decode(window)
		}
		var a, b float64
		if i%2 == 0 {
			a = run(false)
			b = run(true)
		} else {
			b = run(true)
			a = run(false)
		}
		ratios = append(ratios, b/a)
	}
	slices.Sort(ratios)
	med := ratios[pairs/2]
	rate := float64(scrapes.Load()) / scrapedTime.Seconds()
	t.Logf("decode tok/s with a 20/s /metrics scraper ÷ without: median %.3f over %d paired %v windows (same run; quartiles %.3f–%.3f); %.1f scrapes/s, %d bytes each; %v CPU per scrape, so 20/s costs %.2f%% of one core",
		med, pairs, window, ratios[pairs/4], ratios[3*pairs/4], rate, bytes.Load()/max(1, scrapes.Load()), perScrape, 100*20*perScrape.Seconds())
	if rate < 15 {
		t.Errorf("the scraper ran at %.1f/s, want about 20", rate)
	}
	if med < 0.5 {
		t.Errorf("a 20/s scrape halves decode throughput (ratio %.3f)", med)
	}
}
