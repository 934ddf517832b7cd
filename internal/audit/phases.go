package audit

import (
	"context"
	"fmt"
	"sort"
	"sync"
)

var positions = []Position{PosStart, PosMiddle, PosEnd}

// boundary probes the effective maximum: the longest prompt that leaves
// room for the whole answer, one token under the maximum, the maximum,
// one over and twice it, with the canary at each position, streamed and
// not. Each claimed context that differs gets its own probes around it.
func (a *auditor) boundary(ctx context.Context) error {
	m := a.maxCtx
	for _, target := range []int{m - a.genTokens, m - 1, m, m + 1, 2 * m} {
		for _, pos := range positions {
			for _, stream := range []bool{false, true} {
				if _, err := a.probe(ctx, probeSpec{Phase: PhaseBoundary, Target: target, Pos: pos, Stream: stream}); err != nil {
					return err
				}
			}
		}
	}
	done := map[int]bool{m: true}
	for _, c := range a.claims {
		if done[c.Tokens] {
			continue
		}
		done[c.Tokens] = true
		for _, target := range []int{c.Tokens - a.genTokens, c.Tokens + 1} {
			for _, stream := range []bool{false, true} {
				if _, err := a.probe(ctx, probeSpec{Phase: PhaseBoundary, Target: target, Pos: PosStart, Stream: stream}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// cliffSteps bounds the bisection that locates a capacity cliff.
const cliffSteps = 12

// cliff looks for a length below the advertised maximum where the server
// still answers 200 but loses the canary: a ladder of lengths at eighths
// of the room, then bisection between the last good and the first bad
// length. It returns nil when no probe that fits shows a wrong answer.
func (a *auditor) cliff(ctx context.Context, sanityTokens int) (*Cliff, error) {
	room := a.maxCtx - a.genTokens
	for k := 1; k <= 7; k++ {
		target := room * k / 8
		if target <= sanityTokens {
			continue
		}
		if _, err := a.probe(ctx, probeSpec{Phase: PhaseCliff, Target: target, Pos: PosStart}); err != nil {
			return nil, err
		}
	}
	good, bad := a.cliffBracket(sanityTokens)
	if bad == 0 {
		return nil, nil
	}
	tol := max(1, a.maxCtx/512)
bisect:
	for range cliffSteps {
		if bad-good <= tol {
			break
		}
		r, err := a.probe(ctx, probeSpec{Phase: PhaseCliff, Target: (good + bad) / 2, Pos: PosStart})
		if err != nil {
			return nil, err
		}
		switch {
		case r.Tokens <= good || r.Tokens >= bad:
			break bisect // the tokenizer cannot split the bracket further
		case wrongAnswer(r):
			bad = r.Tokens
		case r.Verdict == Pass:
			good = r.Tokens
		default:
			break bisect // neither right nor a wrong 200: no cliff to narrow
		}
	}
	return &Cliff{LastGood: good, FirstBad: bad}, nil
}

// wrongAnswer is the cliff's symptom: a 200 whose content is wrong.
func wrongAnswer(r ProbeResult) bool {
	return r.Verdict == Fail && r.Outcome == OutcomeOK
}

// cliffBracket returns the shortest prompt that fits but was answered
// wrongly (0 if none) and the longest passing prompt shorter than it.
func (a *auditor) cliffBracket(sanityTokens int) (good, bad int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	good = sanityTokens
	for _, r := range a.results {
		if classify(r.Tokens, a.genTokens, a.maxCtx) == fitsWhole && wrongAnswer(r) && (bad == 0 || r.Tokens < bad) {
			bad = r.Tokens
		}
	}
	if bad == 0 {
		return good, 0
	}
	for _, r := range a.results {
		if r.Verdict == Pass && r.Tokens < bad && r.Tokens > good {
			good = r.Tokens
		}
	}
	return good, bad
}

// tenants sends interleaved probes from every tenant at boundary lengths,
// Concurrency at a time, so that a server that hands one request's KV to
// another shows one tenant's canary in another's output.
func (a *auditor) tenants(ctx context.Context) error {
	m := a.maxCtx
	lengths := []int{m - a.genTokens, m + 1, m / 2, 2 * m}
	var batch []prepared
	for round := range a.cfg.Rounds {
		for li, target := range lengths {
			for t := range a.keys {
				k := t + li + round
				p, err := a.prepare(ctx, probeSpec{Phase: PhaseTenants, Tenant: t, Target: target, Pos: positions[k%3], Stream: k%2 == 1})
				if err != nil {
					return err
				}
				batch = append(batch, p)
			}
		}
	}
	jobs := make(chan prepared)
	var wg sync.WaitGroup
	for range a.cfg.Concurrency {
		wg.Go(func() {
			for p := range jobs {
				if ctx.Err() == nil {
					a.send(ctx, p)
				}
			}
		})
	}
	for _, p := range batch {
		jobs <- p
	}
	close(jobs)
	wg.Wait()
	a.mu.Lock()
	sort.SliceStable(a.results, func(i, j int) bool { return a.results[i].ID < a.results[j].ID })
	a.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("audit interrupted: %w", err)
	}
	return nil
}
