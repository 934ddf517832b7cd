package audit

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Pressure is what the pressure phase reached. The incident needed a full
// pool: pages reused between tenants, requests preempted. An audit that
// never fills the pool cannot see that failure, so it says how full it got.
type Pressure struct {
	// PoolTokens is the pool's size as the phase sized it, from PoolSource
	// ("/metrics (bulkhead)", "/metrics (vllm)" or "effective context").
	PoolTokens   int    `json:"pool_tokens"`
	PoolSource   string `json:"pool_source"`
	Requests     int    `json:"requests"`
	PromptTokens int    `json:"prompt_tokens_each"`
	// TokensSent over PoolTokens: above 1 the pool must have been reused.
	TokensSent int `json:"tokens_sent"`
	// From the server's metrics, when exported (-1 otherwise).
	PeakUsage   float64 `json:"peak_usage"`
	Preemptions float64 `json:"preemptions"`
	// PagesReused is a lower bound: pages the phase's prompts needed beyond
	// the pool's size (-1 when the pool's page count is unknown).
	PagesReused int `json:"pages_reused_at_least"`
}

// defaultPageSize is assumed when a server exports its page count but not
// its page size (bulkhead's default; vLLM exports block_size).
const defaultPageSize = 16

// maxPressureRequests bounds the phase.
const maxPressureRequests = 64

// pressure sends enough concurrent long prompts, across tenants, to fill
// the KV pool one and a half times over, and samples /metrics while they
// run. Every prompt is a probe: its canary is checked and it takes part in
// leak detection like any other.
func (a *auditor) pressure(ctx context.Context) (*Pressure, error) {
	a.mu.Lock()
	m := a.maxCtx
	a.mu.Unlock()
	key := a.keys[0]
	before := a.c.metrics(ctx, key)
	pr := &Pressure{PeakUsage: -1, Preemptions: -1, PagesReused: -1}
	pageSize := defaultPageSize
	if before.PageSize > 0 {
		pageSize = int(before.PageSize)
	}
	target := m - a.genTokens - 1
	if before.PagesTotal > 0 {
		pr.PoolTokens, pr.PoolSource = int(before.PagesTotal)*pageSize, "/metrics ("+before.Source+")"
	} else {
		pr.PoolTokens, pr.PoolSource = 4*m, "effective context (no pool figures in /metrics)"
	}
	n := min(maxPressureRequests, max(2*len(a.keys), (3*pr.PoolTokens/2+target-1)/max(target, 1)))
	var batch []prepared
	for i := range n {
		p, err := a.prepare(ctx, probeSpec{Phase: PhasePressure, Tenant: i % len(a.keys), Target: target, Pos: positions[i%3], Stream: i%2 == 1})
		if err != nil {
			return nil, err
		}
		batch = append(batch, p)
		pr.TokensSent += p.Prompt.Tokens
	}
	pr.Requests, pr.PromptTokens = n, batch[0].Prompt.Tokens
	// Sample the pool while the prompts run.
	stop := make(chan struct{})
	var peak float64 = -1
	var sampler sync.WaitGroup
	sampler.Go(func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if s := a.c.metrics(ctx, key); s.Usage >= 0 {
				peak = max(peak, s.Usage)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	var wg sync.WaitGroup
	for _, p := range batch {
		wg.Go(func() { a.send(ctx, p) })
	}
	wg.Wait()
	close(stop)
	sampler.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("audit interrupted: %w", err)
	}
	after := a.c.metrics(ctx, key)
	pr.PeakUsage = peak
	if before.Preemptions >= 0 && after.Preemptions >= 0 {
		pr.Preemptions = after.Preemptions - before.Preemptions
	}
	if before.PagesTotal > 0 {
		need := 0
		for _, p := range batch {
			need += (p.Prompt.Tokens + a.genTokens + pageSize - 1) / pageSize
		}
		pr.PagesReused = max(0, need-int(before.PagesTotal))
	}
	return pr, nil
}

// pressureFinding says how much pressure was reached.
func pressureFinding(pr *Pressure) Finding {
	title := fmt.Sprintf("%d concurrent %d-token prompts across tenants (%d tokens, %.1fx the %d-token pool from %s)",
		pr.Requests, pr.PromptTokens, pr.TokensSent, float64(pr.TokensSent)/float64(max(pr.PoolTokens, 1)), pr.PoolTokens, pr.PoolSource)
	var got []string
	if pr.PeakUsage >= 0 {
		got = append(got, fmt.Sprintf("peak pool usage %.0f%%", 100*pr.PeakUsage))
	}
	if pr.Preemptions >= 0 {
		got = append(got, fmt.Sprintf("%.0f preemptions", pr.Preemptions))
	}
	if pr.PagesReused >= 0 {
		got = append(got, fmt.Sprintf("at least %d pages reused", pr.PagesReused))
	}
	f := Finding{Kind: "pressure", Severity: Info, Title: title,
		Meaning: "the pool was filled and reused while canaries were checked: the condition the incident needed"}
	if len(got) > 0 {
		f.Title += "; " + joinComma(got)
	} else {
		f.Title += "; the server exports no pool metrics, so how full the pool got is unknown"
	}
	reached := pr.PagesReused > 0 || pr.Preemptions > 0 || pr.PeakUsage >= 0.9
	if !reached {
		f.Severity = Medium
		f.Meaning = "the audit could not show that the pool was filled or reused; leaks that need a full pool may have been missed"
	}
	return f
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}
