package gateway

import (
	"context"
	"slices"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/copymodel"
	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/worker"
)

// firstHeld waits until one of the gates holds a pass and returns its index.
func firstHeld(gates ...*gate) int {
	cases := make(chan int, len(gates))
	for i, g := range gates {
		go func() {
			<-g.held
			cases <- i
		}()
	}
	return <-cases
}

// A worker that dies before its request's first token reached the client
// costs the client nothing when another pair can take the request: the
// gateway re-checks its workers and runs the request again elsewhere, and
// the answer is the right one. Every pool drains, the dead worker's too.
// (With one pair the same deaths end in an error: TestWorkerDeathInEveryPhase.)
func TestRequestMovesToAnotherPairWhenAWorkerDiesBeforeItsFirstToken(t *testing.T) {
	prefillCfg := engine.Config{TokenBudget: 64, MaxRunning: 1}
	decodeCfg := engine.Config{TokenBudget: 256, MaxRunning: 8}
	canary := copymodel.AuditWords().Canary[4:8]

	cases := []struct {
		name string
		dies worker.Role
		// left is how many passes the gated role runs before holding: 0
		// holds the prefill's first chunk, or decode's first pass (its first
		// token, after the KV arrived).
		left int
	}{
		{"prefilling, prefill dies", worker.Prefill, 0},
		{"transferring, decode dies", worker.Decode, -1},
		{"before the first token, decode dies", worker.Decode, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var pre, dec []*node
			var gates []*gate
			switch {
			case tc.dies == worker.Prefill:
				for range 2 {
					g := newGate(tc.left)
					gates = append(gates, g)
					pre = append(pre, startNode(t, worker.Prefill, smallPool, prefillCfg, nil, g))
				}
				dec = []*node{startWorkerWith(t, worker.Decode, smallPool, decodeCfg)}
			case tc.left < 0: // the prefill's last chunk holds, with decode's reservation open
				g := newGate(3)
				pre = []*node{startNode(t, worker.Prefill, smallPool, prefillCfg, nil, g)}
				dec = []*node{startWorkerWith(t, worker.Decode, smallPool, decodeCfg), startWorkerWith(t, worker.Decode, smallPool, decodeCfg)}
				gates = []*gate{g}
			default:
				pre = []*node{startWorkerWith(t, worker.Prefill, smallPool, prefillCfg)}
				for range 2 {
					g := newGate(tc.left)
					gates = append(gates, g)
					dec = append(dec, startNode(t, worker.Decode, smallPool, decodeCfg, nil, g))
				}
			}
			g := newGateway(t, pre, dec)
			prompt, want := canaryPrompt(t, g, canary, 40, 200, 7)
			out := make(chan []int32, 1)
			errc := make(chan error, 1)
			go func() {
				ch, err := g.Submit(context.Background(), engine.Request{Prompt: prompt, MaxTokens: len(want)})
				if err != nil {
					errc <- err
					return
				}
				toks, err := collect(t, ch)
				if err != nil {
					errc <- err
					return
				}
				out <- toks
			}()

			var victim *node
			var survivors []*node
			held := firstHeld(gates...)
			switch {
			case tc.dies == worker.Prefill:
				victim, survivors = pre[held], []*node{pre[1-held], dec[0]}
				gates[1-held].release()
				victim.kill(gates[held])
			case tc.left < 0:
				// The decode worker holding the reservation dies.
				v := 0
				if st := dec[1].eng.Stats(); st.PagesFree < st.PagesTotal {
					v = 1
				}
				victim, survivors = dec[v], []*node{pre[0], dec[1-v]}
				victim.kill(nil)
				gates[0].release()
			default:
				victim, survivors = dec[held], []*node{pre[0], dec[1-held]}
				gates[1-held].release()
				victim.kill(gates[held])
			}

			select {
			case err := <-errc:
				t.Fatalf("the request failed though another pair was healthy: %v", err)
			case toks := <-out:
				if !slices.Equal(toks, want) {
					t.Errorf("retried request answered %v, want the canary %v", toks, want)
				}
			}
			for _, n := range survivors {
				n.drained(t)
			}
			killedDrained(t, tc.name, victim)
		})
	}
}
