package engine

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/kvcache"
)

// RequestInfo is one live request as the operator's page map shows it.
type RequestInfo struct {
	ID        uint64
	Tenant    string
	Phase     string // admitted (waiting), prefilling, preempted, transferring, decoding
	Owner     kvcache.Owner
	Prompt    int
	Computed  int
	Generated int
	Pages     int
}

// AbortInfo is one request that ended in an error, most recent last.
type AbortInfo struct {
	ID     uint64
	Tenant string
	Reason string // ownership check failure, rejected handoff, cancelled, shutdown, internal
	Detail string
	At     time.Time
}

// Status is a read-only snapshot of the engine for the page map: its live
// requests, its recent aborts and its counters.
type Status struct {
	Requests []RequestInfo
	Aborts   []AbortInfo
	Stats    Stats
}

// maxAborts bounds the abort log the page map shows.
const maxAborts = 32

// abortLog keeps the most recent aborts; owned by the loop.
type abortLog struct{ recent []AbortInfo }

// Status takes a snapshot on the step loop, between steps, so it sees one
// consistent scheduler state. It waits at most for the step in progress; it
// fails when ctx ends first or the engine is closed.
func (e *Engine) Status(ctx context.Context) (Status, error) {
	ch := make(chan Status, 1)
	if err := e.postAlways(func() { ch <- e.statusOnLoop() }); err != nil {
		return Status{}, err
	}
	select {
	case st := <-ch:
		return st, nil
	case <-ctx.Done():
		return Status{}, ctx.Err()
	}
}

// statusOnLoop builds the snapshot (loop only).
func (e *Engine) statusOnLoop() Status {
	seqs := e.sched.AppendSeqs(nil)
	st := Status{Requests: make([]RequestInfo, 0, len(seqs)), Aborts: slices.Clone(e.aborts.recent)}
	for _, q := range seqs {
		st.Requests = append(st.Requests, RequestInfo{
			ID: q.ID, Tenant: q.Tenant, Phase: q.State.String(), Owner: q.Owner,
			Prompt: q.Prompt, Computed: q.Computed, Generated: q.Generated, Pages: q.Pages,
		})
	}
	slices.SortFunc(st.Requests, func(a, b RequestInfo) int { return cmp.Compare(a.ID, b.ID) })
	e.mu.Lock()
	st.Stats = e.stats
	e.mu.Unlock()
	return st
}

// noteEnd records a request ending in error in the abort log (loop only).
func (e *Engine) noteEnd(j *job, final Event) {
	if final.Err == nil {
		return
	}
	a := AbortInfo{ID: j.id, Tenant: j.req.Tenant, Reason: abortReason(final.Err), Detail: final.Err.Error(), At: time.Now()}
	if len(e.aborts.recent) == maxAborts {
		e.aborts.recent = append(e.aborts.recent[:0], e.aborts.recent[1:]...)
	}
	e.aborts.recent = append(e.aborts.recent, a)
}

// abortReason classifies an abort the way an operator asks about it.
func abortReason(err error) string {
	switch {
	case errors.Is(err, kvcache.ErrOwnership):
		return "ownership check failure"
	case strings.Contains(err.Error(), "KV transfer"):
		return "rejected handoff"
	case errors.Is(err, ErrShuttingDown):
		return "shutdown"
	case errors.Is(err, ErrAborted):
		return "cancelled"
	}
	return "internal error"
}
