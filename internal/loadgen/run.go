package loadgen

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"
)

// Run performs the benchmark: it prepares the prompts (not timed), then
// sends cfg.Requests requests with cfg.Concurrency in flight, writing a
// progress line to progress (if not nil) about once a second.
func Run(ctx context.Context, cfg Config, progress io.Writer) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Minute
	}
	c := newClient(cfg)
	model := cfg.Model
	if model == "" {
		var err error
		if model, err = c.firstModel(ctx); err != nil {
			return nil, err
		}
	}
	pm := &promptMaker{rng: rand.New(rand.NewPCG(uint64(cfg.Seed), 0x6c6f616467656e)), tokenize: tokenizer(ctx, c, model)}
	prompts := make([]string, cfg.Requests)
	measured := make([]int, cfg.Requests)
	for i := range prompts {
		prompts[i], measured[i] = pm.make(ctx, cfg.InputLen)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("loadgen: preparing prompts: %w", err)
		}
	}

	results := make([]result, cfg.Requests)
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done, failed := 0, 0
	start := time.Now()
	stopProgress := startProgress(progress, cfg.Requests, start, func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return done, failed
	})
	for range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				rctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
				r := c.complete(rctx, cfg, model, prompts[i])
				cancel()
				if r.promptTokens == 0 {
					r.promptTokens = measured[i]
				}
				results[i] = r
				mu.Lock()
				done++
				if r.err != nil {
					failed++
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for i := range cfg.Requests {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	elapsed := time.Since(start)
	stopProgress()
	rep := summarize(cfg, model, pm.tokenize != nil, results[:done], elapsed)
	if err := ctx.Err(); err != nil {
		return rep, fmt.Errorf("loadgen: interrupted after %d of %d requests: %w", done, cfg.Requests, err)
	}
	return rep, nil
}

// startProgress writes "progress: done/total ..." lines until stopped.
func startProgress(w io.Writer, total int, start time.Time, counts func() (int, int)) func() {
	if w == nil {
		return func() {}
	}
	stop := make(chan struct{})
	finished := make(chan struct{})
	line := func() {
		d, f := counts()
		el := time.Since(start).Seconds()
		fmt.Fprintf(w, "progress: %d/%d requests, %d failed, %.1f req/s, %.0fs elapsed\n", d, total, f, float64(d)/max(el, 1e-9), el)
	}
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				line()
			case <-stop:
				line()
				return
			}
		}
	}()
	return func() { close(stop); <-finished }
}
