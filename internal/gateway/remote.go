package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/leakrepro"
	"github.com/bulkhead-llm/bulkhead/internal/worker"
)

// MaxContext is the context the gateway advertises and admits against.
func (g *Gateway) MaxContext() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.want.MaxContext
}

// Ready reports whether a healthy prefill+decode pair exists.
func (g *Gateway) Ready() bool { return g.pick(worker.Prefill) != nil && g.pick(worker.Decode) != nil }

// Stats sums the workers' last reported load.
func (g *Gateway) Stats() engine.Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	var st engine.Stats
	for _, m := range g.members {
		if m.role == worker.Decode {
			st.Running += m.info.Running
			st.Waiting += m.info.Waiting
		}
		st.PagesTotal += m.info.PagesTotal
		st.PagesFree += m.info.PagesFree
	}
	return st
}

// Submit admits req (DESIGN I4: an oversized prompt is answered here and no
// worker hears of it), reserves its KV on a decode worker, has a prefill
// worker compute and transfer it, and returns decode's token stream.
// Prefill's and decode's client errors come back as the same typed errors
// an engine returns, so the client sees the same 4xx.
func (g *Gateway) Submit(ctx context.Context, req engine.Request) (<-chan engine.Event, error) {
	maxCtx := g.MaxContext()
	switch {
	case len(req.Prompt) == 0:
		return nil, fmt.Errorf("%w: the prompt is empty", engine.ErrInvalidRequest)
	case len(req.Prompt)+1 > maxCtx && !leakrepro.Enabled:
		return nil, &engine.ContextLengthError{PromptTokens: len(req.Prompt), Limit: maxCtx - 1, MaxContext: maxCtx}
	case req.MaxTokens < 1:
		return nil, fmt.Errorf("%w: max tokens %d must be at least 1", engine.ErrInvalidRequest, req.MaxTokens)
	case req.Sampling.Constraint != nil:
		// The constraint is a live matcher; the workers would need the
		// grammar itself. Refused rather than silently dropped.
		return nil, fmt.Errorf("%w: structured output (response_format, grammar, regex) is not supported through the gateway yet", engine.ErrInvalidRequest)
	}
	dec, pre := g.pick(worker.Decode), g.pick(worker.Prefill)
	if dec == nil || pre == nil {
		return nil, fmt.Errorf("%w: no healthy prefill and decode worker pair", engine.ErrShuttingDown)
	}
	tid, nonce := g.nextID.Add(1), rand.Uint64()
	sctx, cancel := context.WithCancel(ctx)
	resp, err := g.post(sctx, dec.url+"/v1/worker/decode", worker.DecodeRequest{TransferID: tid, Nonce: nonce, Request: req})
	if err != nil {
		cancel()
		return nil, err
	}
	lines := bufio.NewReader(resp.Body)
	first, err := readLine(lines)
	if err != nil || first.Reserved == nil {
		resp.Body.Close()
		cancel()
		if err == nil && first.Error != nil {
			return nil, worker.DecodeError(first.Error)
		}
		return nil, fmt.Errorf("%w: decode worker %s: no reservation (%v)", engine.ErrInternal, dec.url, err)
	}
	if first.Reserved.HandoffTokens > 0 {
		presp, err := g.post(sctx, pre.url+"/v1/worker/prefill",
			worker.PrefillRequest{TransferID: tid, Nonce: nonce, DecodeKV: dec.info.KVAddr, Request: req})
		if err == nil {
			presp.Body.Close()
		}
		if err != nil {
			// Closing decode's stream aborts its reservation and frees it.
			resp.Body.Close()
			cancel()
			return nil, err
		}
	}
	events := make(chan engine.Event, req.MaxTokens+1)
	go func() {
		defer close(events)
		defer cancel()
		defer resp.Body.Close()
		for {
			l, err := readLine(lines)
			switch {
			case err != nil:
				if ctx.Err() != nil {
					events <- engine.Event{Err: engine.ErrAborted}
				} else {
					events <- engine.Event{Err: fmt.Errorf("%w: decode worker %s: stream ended: %v", engine.ErrInternal, dec.url, err)}
				}
				return
			case l.Token != nil:
				events <- engine.Event{Token: l.Token.ID, Logprob: l.Token.Logprob, TopLogprobs: l.Token.TopLogprobs}
			case l.Finish != nil:
				events <- engine.Event{Finish: &engine.Finish{Reason: l.Finish.Reason, Usage: l.Finish.Usage}}
				return
			case l.Error != nil:
				events <- engine.Event{Err: worker.DecodeError(l.Error)}
				return
			}
		}
	}()
	return events, nil
}

// post sends a JSON body; a non-200 answer becomes the typed error its body
// names (so prefill's 4xx reaches the client unchanged).
func (g *Gateway) post(ctx context.Context, url string, body any) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", engine.ErrInvalidRequest, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", engine.ErrInternal, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := g.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, engine.ErrAborted
		}
		return nil, fmt.Errorf("%w: %s: %v", engine.ErrInternal, url, err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	var eb struct {
		Error *worker.ErrorBody `json:"error"`
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if json.Unmarshal(raw, &eb) == nil && eb.Error != nil {
		return nil, worker.DecodeError(eb.Error)
	}
	return nil, fmt.Errorf("%w: %s: %s", engine.ErrInternal, url, resp.Status)
}

// readLine reads one NDJSON line of a decode stream.
func readLine(r *bufio.Reader) (worker.Line, error) {
	var l worker.Line
	b, err := r.ReadBytes('\n')
	if err != nil {
		if errors.Is(err, io.EOF) && len(b) == 0 {
			return l, io.ErrUnexpectedEOF
		}
		if len(b) == 0 {
			return l, err
		}
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return l, fmt.Errorf("malformed stream line: %v", err)
	}
	return l, nil
}
