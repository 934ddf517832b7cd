package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/tenant"
)

// Many choices: n and best_of (completions), n (chat), and a list of
// prompts (completions) in one request. Each choice is its own engine
// sequence with its own page table, so I2 checks every read of every
// choice. The prompt's KV is computed once: the first choice of a prompt
// is submitted alone, and the other forks are submitted only once it has
// produced its first event, by which time the scheduler has sealed the
// prompt's full pages into the tenant's prefix cache (sched.Complete). The
// forks take references to those shared read-only pages (MatchPrefix) and
// recompute only the last partial page's tokens into pages of their own,
// which no sibling can read (its owner is another page table). Through the
// gateway the same sequence of Submits is n disaggregated requests; they
// share the prompt's pages only when they land on the same prefill worker.
//
// Choice i of a prompt samples with seed + i, so choice 0 of every prompt
// is what the same request with n = 1 returns. Choices are indexed
// prompt-major: index = prompt × n + choice. usage counts each prompt once
// and every generated token, best_of's discarded ones included (they were
// computed); cached_tokens counts what the first choice of each prompt
// found cached, so it never exceeds prompt_tokens.

// Bounds on the sequences one request may start (DESIGN I11).
const (
	maxChoices = 16 // n and best_of
	maxPrompts = 32
	maxSeqs    = 64 // prompts × best_of
)

// choices reads n (both endpoints).
func (c *commonRequest) choices(p *genParams) *apiError {
	p.n = 1
	if c.N != nil {
		if *c.N < 1 || *c.N > maxChoices {
			return invalid("n", "invalid_value", "n = %d must be between 1 and %d", *c.N, maxChoices)
		}
		p.n = *c.N
	}
	p.bestOf = p.n
	return nil
}

// bestOf reads best_of and the number of prompts (completions only).
func (r *completionRequest) bestOf(p *genParams) *apiError {
	if b := r.BestOf; b != nil {
		switch {
		case *b < 1 || *b > maxChoices:
			return invalid("best_of", "invalid_value", "best_of = %d must be between 1 and %d", *b, maxChoices)
		case *b < p.n:
			return invalid("best_of", "invalid_value", "best_of = %d must be at least n = %d", *b, p.n)
		case *b > p.n && p.stream:
			return invalid("best_of", "unsupported_value", "best_of = %d with stream = true is not supported: the best choices are known only at the end", *b)
		}
		p.bestOf = *b
	}
	np := r.Prompt.count()
	if np > maxPrompts {
		return invalid("prompt", "invalid_value", "prompt holds %d prompts; at most %d are allowed", np, maxPrompts)
	}
	if np*p.bestOf > maxSeqs {
		return invalid("prompt", "invalid_value", "%d prompts × best_of %d = %d sequences; at most %d are allowed per request", np, p.bestOf, np*p.bestOf, maxSeqs)
	}
	return nil
}

// forkParams are the settings of choice i: its own seed and, with
// structured output, its own constraint. best_of needs each token's
// logprob to rank the choices, whether or not the client asked for them.
func forkParams(p genParams, i int) genParams {
	q := p
	q.sampling.Seed += uint64(i)
	if p.newConstraint != nil {
		q.sampling.Constraint = p.newConstraint()
	}
	if p.bestOf > p.n {
		q.logprobs = true
	}
	return q
}

// fork is one sequence of a many-choice request.
type fork struct {
	prompt, choice int // choice: 0 … best_of−1 within its prompt
	p              genParams
	a              *admission
	first          <-chan struct{} // closed at the sequence's first event
	text           []byte
	lps            []tokenLP
	res            genResult
	opened         bool // streaming: the choice's first chunk is sent
}

// cumLogprob is the sum of the logprobs of the fork's tokens (best_of's
// ranking, as vLLM's cumulative_logprob).
func (f *fork) cumLogprob() float64 {
	var s float64
	for _, t := range f.lps {
		s += float64(t.logprob)
	}
	return s
}

// tapFirst makes a's stream signal its first event.
func tapFirst(a *admission) <-chan struct{} {
	in, out, first := a.events, make(chan engine.Event), make(chan struct{})
	go func() {
		defer close(out)
		seen := false
		for ev := range in {
			if !seen {
				seen = true
				close(first)
			}
			out <- ev
		}
		if !seen {
			close(first)
		}
	}()
	a.events = out
	return first
}

// abandon cancels an admitted sequence that will not be run and waits for
// the engine to close its stream, which frees its pages.
func abandon(a *admission) {
	a.release()
	for range a.events {
	}
}

// admitForks admits every sequence: each prompt's first choice, then,
// once that has passed its prefill, the prompt's other forks. On an error
// nothing is left running.
func (s *Server) admitForks(r *http.Request, info *requestInfo, prompts [][]int32, p genParams, param string) ([]*fork, *apiError) {
	var forks []*fork
	fail := func(e *apiError) ([]*fork, *apiError) {
		for _, f := range forks {
			abandon(f.a)
		}
		return nil, e
	}
	admit := func(k, i int) *apiError {
		f := &fork{prompt: k, choice: i, p: forkParams(p, i)}
		a, e := s.admit(r, info, prompts[k], &f.p, param)
		if e != nil {
			return e
		}
		f.a, f.first = a, tapFirst(a)
		forks = append(forks, f)
		return nil
	}
	// Every prompt is checked before any is submitted, so a refused
	// request reaches the engine not at all.
	for k, pr := range prompts {
		q := p
		if e := s.checkPrompt(info, pr, &q, param); e != nil {
			if len(prompts) > 1 {
				e.Message = fmt.Sprintf("prompt %d: %s", k, e.Message)
			}
			return nil, e
		}
	}
	for k := range prompts {
		if e := admit(k, 0); e != nil {
			return fail(e)
		}
	}
	heads := slices.Clone(forks)
	for k, head := range heads {
		if p.bestOf == 1 {
			break
		}
		select {
		case <-head.first:
		case <-r.Context().Done():
		}
		for i := 1; i < p.bestOf; i++ {
			if e := admit(k, i); e != nil {
				return fail(e)
			}
		}
	}
	total := 0
	for _, pr := range prompts {
		total += len(pr)
	}
	info.promptTokens = total
	return forks, nil
}

// serveChoices is serveGeneration for more than one sequence: the limits,
// then tokenizing every prompt, then admitting every fork before any byte
// of the response is written, so a refusal is still a plain error.
func (s *Server) serveChoices(w http.ResponseWriter, r *http.Request, tokenize func() ([][]int32, *apiError), p genParams, param string, shapeFor func(prompt int) shape) {
	info := infoFrom(r.Context())
	t := info.tenant
	if !s.enter() {
		s.refuse(w, t.ID, shuttingDown())
		return
	}
	defer s.leave()
	lease, e := s.acquire(info)
	if e != nil {
		s.refuse(w, t.ID, e)
		return
	}
	defer lease.Release()
	prompts, e := tokenize()
	if e != nil {
		info.doneWithBody()
		s.refuse(w, t.ID, e)
		return
	}
	forks, e := s.admitForks(r, info, prompts, p, param)
	info.doneWithBody()
	if e != nil {
		s.refuse(w, t.ID, e)
		return
	}
	defer func() {
		for _, f := range forks {
			f.a.release()
		}
	}()
	lease.Charge(info.promptTokens)
	var res genResult
	if p.stream {
		res = s.streamForks(w, r, forks, p, shapeFor)
	} else {
		res = s.respondForks(w, forks, p, info, shapeFor)
	}
	lease.Charge(res.usage.completion)
	info.completionTokens = res.usage.completion
	s.metrics.finished(t.ID, s.outcome(res, r), res.timing, res.usage)
}

// runForks runs every fork to its end, each in its own goroutine, and
// calls done for each that succeeded; the first failure cancels the rest.
func (s *Server) runForks(forks []*fork, arrival time.Time, emit func(f *fork, c chunk) error, done func(f *fork) error) {
	var wg sync.WaitGroup
	var once sync.Once
	cancelAll := func() {
		for _, f := range forks {
			f.a.cancel()
		}
	}
	for _, f := range forks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.res = s.run(f.a, f.p, arrival, func(c chunk) error { return emit(f, c) })
			if f.res.err == nil && done != nil {
				if err := done(f); err != nil {
					f.res.err, f.res.clientErr = err, true
				}
			}
			if f.res.err != nil {
				once.Do(cancelAll)
			}
		}()
	}
	wg.Wait()
}

// errRank orders the errors a request's forks end with: the failure that
// cancelled the others comes before their aborts, and those before a
// client's write error.
func errRank(r genResult) int {
	switch {
	case r.err == nil:
		return 0
	case r.clientErr:
		return 1
	case errors.Is(r.err, engine.ErrAborted):
		return 2
	}
	return 3
}

// summary folds the forks' results into the request's: the most telling
// error (errRank), usage summed.
func summary(forks []*fork, arrival time.Time) genResult {
	res := genResult{timing: timing{arrival: arrival}}
	for _, f := range forks {
		fr := f.res
		if errRank(fr) > errRank(res) {
			res.err, res.clientErr = fr.err, fr.clientErr
		}
		if res.finish == "" {
			res.finish = fr.finish
		}
		res.usage.completion += fr.usage.completion
		if f.choice == 0 {
			res.usage.prompt += fr.usage.prompt
			res.usage.cached += fr.usage.cached
		}
		if t := fr.timing.first; !t.IsZero() && (res.timing.first.IsZero() || t.Before(res.timing.first)) {
			res.timing.first = t
		}
		if fr.timing.last.After(res.timing.last) {
			res.timing.last = fr.timing.last
		}
	}
	return res
}

// chosen orders the forks as the response lists them: prompt-major, and
// within a prompt the n best by cumulative logprob when best_of > n
// (ties keep the lower seed first), else by choice.
func chosen(forks []*fork, n, bestOf int) []*fork {
	out := slices.Clone(forks)
	slices.SortStableFunc(out, func(a, b *fork) int {
		if a.prompt != b.prompt {
			return a.prompt - b.prompt
		}
		if bestOf > n {
			ca, cb := a.cumLogprob(), b.cumLogprob()
			switch {
			case ca > cb:
				return -1
			case ca < cb:
				return 1
			}
		}
		return a.choice - b.choice
	})
	kept := out[:0]
	rank := map[int]int{}
	for _, f := range out {
		if rank[f.prompt] < n {
			rank[f.prompt]++
			kept = append(kept, f)
		}
	}
	return kept
}

func (s *Server) respondForks(w http.ResponseWriter, forks []*fork, p genParams, info *requestInfo, shapeFor func(int) shape) genResult {
	s.runForks(forks, info.start, func(f *fork, c chunk) error {
		f.text = append(f.text, c.text...)
		f.lps = append(f.lps, c.tokens...)
		return nil
	}, nil)
	res := summary(forks, info.start)
	s.setWriteDeadline(w)
	if res.err != nil {
		writeError(w, s.streamError(res, info))
		return res
	}
	var parts []any
	for i, f := range chosen(forks, p.n, p.bestOf) {
		lps := f.lps
		if !p.logprobs {
			lps = nil // gathered only to rank best_of
		}
		parts = append(parts, withIndex(shapeFor(f.prompt).full(string(f.text), lps, f.res.finish, usageCounts{}), i))
	}
	writeJSON(w, http.StatusOK, joinChoices(parts, res.usage))
	return res
}

func (s *Server) streamForks(w http.ResponseWriter, r *http.Request, forks []*fork, p genParams, shapeFor func(int) shape) genResult {
	info := infoFrom(r.Context())
	sse := &sseWriter{w: w, rc: http.NewResponseController(w), timeout: s.cfg.WriteTimeout}
	sse.start()
	msgs := make(chan any)
	gone := make(chan struct{}) // the client stopped reading
	send := func(v any) error {
		select {
		case msgs <- v:
			return nil
		case <-gone:
			return errClientGone
		}
	}
	// best_of = n here (params refuses more when streaming), so every
	// fork is a choice: index = prompt × n + choice. Each fork's chunks
	// are sent in order by its own goroutine; forks interleave.
	open := func(f *fork) error {
		if f.opened {
			return nil
		}
		f.opened = true
		if fc := shapeFor(f.prompt).first(); fc != nil {
			return send(withIndex(fc, f.prompt*p.n+f.choice))
		}
		return nil
	}
	go func() {
		defer close(msgs)
		s.runForks(forks, info.start, func(f *fork, c chunk) error {
			if err := open(f); err != nil {
				return err
			}
			return send(withIndex(shapeFor(f.prompt).delta(c), f.prompt*p.n+f.choice))
		}, func(f *fork) error {
			if err := open(f); err != nil {
				return err
			}
			return send(withIndex(shapeFor(f.prompt).final(f.res.finish), f.prompt*p.n+f.choice))
		})
	}()
	var werr error
	for m := range msgs {
		if werr != nil {
			continue
		}
		if werr = sse.send(m); werr != nil {
			close(gone)
		}
	}
	res := summary(forks, info.start)
	if werr != nil {
		res.err, res.clientErr = werr, true
		return res
	}
	if res.err != nil {
		if r.Context().Err() == nil {
			_ = sse.send(s.streamError(res, info).body())
		}
		return res
	}
	if p.includeUsage {
		if err := sse.send(shapeFor(0).usageChunk(res.usage)); err != nil {
			return res
		}
	}
	_ = sse.done()
	return res
}

// errClientGone ends the forks of a stream whose client stopped reading.
var errClientGone = errors.New("client stopped reading the stream")

// acquire takes the tenant's concurrency lease, as serveGeneration does.
func (s *Server) acquire(info *requestInfo) (*tenant.Lease, *apiError) {
	lease, err := info.tenant.Limiter().Acquire()
	if err != nil {
		var le *tenant.LimitError
		if errors.As(err, &le) {
			return nil, limitError(le)
		}
		return nil, internalError(info.id)
	}
	return lease, nil
}

// withIndex sets the choice index of a one-choice body built by a shape.
func withIndex(v any, i int) any {
	switch b := v.(type) {
	case completionBody:
		for j := range b.Choices {
			b.Choices[j].Index = i
		}
		return b
	case chatBody:
		for j := range b.Choices {
			b.Choices[j].Index = i
		}
		return b
	}
	return v
}

// joinChoices puts the choices of one-choice bodies into one body with the
// request's usage.
func joinChoices(parts []any, u usageCounts) any {
	switch first := parts[0].(type) {
	case completionBody:
		for _, p := range parts[1:] {
			first.Choices = append(first.Choices, p.(completionBody).Choices...)
		}
		first.Usage = u.json()
		return first
	case chatBody:
		for _, p := range parts[1:] {
			first.Choices = append(first.Choices, p.(chatBody).Choices...)
		}
		first.Usage = u.json()
		return first
	}
	return parts[0]
}

// serveCompletionList serves a completions request whose prompt is a list:
// each prompt tokenized (after the limits, in serveChoices) and echoed on
// its own choices.
func (s *Server) serveCompletionList(w http.ResponseWriter, r *http.Request, req *completionRequest, p genParams, sh *completionShape) {
	info := infoFrom(r.Context())
	echoes := make([]string, req.Prompt.count())
	tokenize := func() ([][]int32, *apiError) {
		var prompts [][]int32
		for k := range echoes {
			pf := promptField{isIDs: req.Prompt.isIDs, set: true}
			if pf.isIDs {
				pf.tokens = req.Prompt.lists[k]
			} else {
				pf.text = req.Prompt.texts[k]
			}
			prompt, e := s.promptTokens(pf, s.parseSpecial(info.tenant))
			if e != nil {
				e.Message = fmt.Sprintf("prompt %d: %s", k, e.Message)
				return nil, e
			}
			if req.Echo {
				echoes[k] = pf.text
				if pf.isIDs {
					echoes[k] = s.tok.Decode(prompt)
				}
			}
			prompts = append(prompts, prompt)
		}
		return prompts, nil
	}
	s.serveChoices(w, r, tokenize, p, "prompt", func(k int) shape {
		c := *sh
		c.echo = echoes[k]
		return &c
	})
}
