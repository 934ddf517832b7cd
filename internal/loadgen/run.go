package loadgen

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	prog "github.com/bulkhead-llm/bulkhead/internal/progress"
)

// Run performs the benchmark: it prepares the prompts (not timed), then
// sends cfg.Requests requests with cfg.Concurrency in flight, reporting
// progress on progress (if not nil) through internal/progress: a bar with
// rate and ETA on a terminal, a line per tenth of the requests otherwise.
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
	rep := prog.New(progress, fmt.Sprintf("bench serve c=%d", cfg.Concurrency), int64(cfg.Requests), "requests")
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
					if failed <= maxFailureLines {
						rep.Status("request %d failed: %v", i, r.err)
					}
				}
				mu.Unlock()
				rep.Add(1)
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
	if failed > 0 {
		rep.Status("%d of %d requests failed", failed, done)
	}
	rep.Done()
	report := summarize(cfg, model, pm.tokenize != nil, results[:done], elapsed)
	if err := ctx.Err(); err != nil {
		return report, fmt.Errorf("loadgen: interrupted after %d of %d requests: %w", done, cfg.Requests, err)
	}
	return report, nil
}

// maxFailureLines bounds the failures reported one by one; the rest are
// in the count at the end and in the report's error table.
const maxFailureLines = 3
