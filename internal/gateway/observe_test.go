package gateway

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/worker"
)

// started returns a gateway over members, as if its first check had run.
func started(members ...*member) *Gateway {
	g := &Gateway{members: members, started: make(chan struct{})}
	close(g.started)
	return g
}

func mem(role worker.Role, healthy bool, problem string) *member {
	return &member{url: "http://" + string(role), role: role, healthy: healthy, problem: problem, inflight: new(atomic.Int64)}
}

func TestRefusalsAreClassifiedTheWayAnOperatorAsks(t *testing.T) {
	noPair := fmt.Errorf("%w: no healthy prefill and decode worker pair", engine.ErrShuttingDown)
	pair := []*member{mem(worker.Prefill, true, ""), mem(worker.Decode, true, "")}
	drifted := []*member{mem(worker.Prefill, true, ""), mem(worker.Decode, false, "max_context is 256, want 512")}
	down := []*member{mem(worker.Prefill, true, ""), mem(worker.Decode, false, unreachablePrefix+"connection refused")}
	for _, c := range []struct {
		members []*member
		err     error
		want    string
	}{
		{pair, &engine.OverloadedError{Reason: "full"}, "overload"},
		{pair, handoffError{fmt.Errorf("%w: KV transfer: NACK", engine.ErrInternal)}, "rejected handoff"},
		{pair, handoffError{&engine.ContextLengthError{}}, "context length"}, // prefill's 4xx is the request's fault
		{pair, fmt.Errorf("%w: bad", engine.ErrInvalidRequest), "invalid request"},
		{pair, handoffError{engine.ErrAborted}, ""}, // the client left
		{drifted, noPair, "drift"},
		{down, noPair, "no healthy worker"},
		{pair, engine.ErrShuttingDown, "worker shutting down"}, // a pair exists; the chosen one was draining
		{pair, errors.New("decode worker: no reservation"), "internal"},
	} {
		if got := started(c.members...).refusalReason(c.err); got != c.want {
			t.Errorf("%v (decode worker %q): reason %q, want %q", c.err, c.members[1].problem, got, c.want)
		}
	}
	g := started(drifted...)
	if d := g.refusalDetail("drift", noPair); d != noPair.Error()+"; decode http://decode drift: max_context is 256, want 512" {
		t.Errorf("drift detail %q", d)
	}
	if m := g.Members(); m[1].State != "drift" || m[1].Problem != "max_context is 256, want 512" || m[0].State != "healthy" || m[0].Problem != "" {
		t.Errorf("members %+v", m)
	}
	if m := started(down...).Members(); m[1].State != "unreachable" || m[1].Problem != "connection refused" {
		t.Errorf("unreachable member %+v", m[1])
	}
}

func TestRefusalLogKeepsTheMostRecent(t *testing.T) {
	var l refusalLog
	for i := range maxRefusals + 5 {
		l.note(engine.AbortInfo{ID: uint64(i)})
	}
	got := l.list()
	if len(got) != maxRefusals || got[0].ID != 5 || got[len(got)-1].ID != maxRefusals+4 {
		t.Fatalf("%d kept, first %d, last %d", len(got), got[0].ID, got[len(got)-1].ID)
	}
}
