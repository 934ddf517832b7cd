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

// abortLog keeps the most recent aborts; owned by the machine.
type abortLog struct{ recent []AbortInfo }

// Status takes a snapshot on the shell, between steps, so it sees one
// consistent machine state. It waits at most for the step in progress; it
// fails when ctx ends first or the engine is closed.
func (e *Engine) Status(ctx context.Context) (Status, error) {
	ch := make(chan Status, 1)
	if err := e.postMail(mail{status: ch}); err != nil {
		return Status{}, err
	}
	select {
	case st := <-ch:
		return st, nil
	case <-ctx.Done():
		return Status{}, ctx.Err()
	}
}

// Status lists the machine's live requests and recent aborts (Stats left
// for the caller to fill).
func (m *Machine) Status() Status {
	seqs := m.sched.AppendSeqs(nil)
	st := Status{Requests: make([]RequestInfo, 0, len(seqs)), Aborts: slices.Clone(m.aborts.recent)}
	for _, q := range seqs {
		st.Requests = append(st.Requests, RequestInfo{
			ID: q.ID, Tenant: q.Tenant, Phase: q.State.String(), Owner: q.Owner,
			Prompt: q.Prompt, Computed: q.Computed, Generated: q.Generated, Pages: q.Pages,
		})
	}
	slices.SortFunc(st.Requests, func(a, b RequestInfo) int { return cmp.Compare(a.ID, b.ID) })
	return st
}

// noteEnd records a request ending in error in the abort log.
func (m *Machine) noteEnd(j *job, final Event) {
	if final.Err == nil {
		return
	}
	a := AbortInfo{ID: j.id, Tenant: j.req.Tenant, Reason: abortReason(final.Err), Detail: final.Err.Error(), At: m.now()}
	if len(m.aborts.recent) == maxAborts {
		m.aborts.recent = append(m.aborts.recent[:0], m.aborts.recent[1:]...)
	}
	m.aborts.recent = append(m.aborts.recent, a)
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
