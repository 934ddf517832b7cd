package podmetrics

import (
	"context"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
)

// CountPrompt records prompt tokens processed without a generation stream
// (a prefill worker's handoff).
func (m *Metrics) CountPrompt(n int) {
	m.requests.Add(1)
	m.prompt.Add(uint64(n))
}

// Track relays events from an engine stream unchanged and records the
// request's timing and token counts when the stream ends. It adds one
// goroutine and one channel hop per request, never per scrape. prompt is
// the number of prompt tokens this role processes (also counted as prefix
// cache query tokens, the way vLLM counts them).
func (m *Metrics) Track(ctx context.Context, prompt int, in <-chan engine.Event) <-chan engine.Event {
	m.requests.Add(1)
	m.prompt.Add(uint64(prompt))
	out := make(chan engine.Event, cap(in))
	start := time.Now()
	go func() {
		defer close(out)
		var last time.Time
		done := false
		for ev := range in {
			if ev.Err == nil && ev.Finish == nil {
				now := time.Now()
				if last.IsZero() {
					m.ttft.Observe(now.Sub(start).Seconds())
				} else {
					m.itl.Observe(now.Sub(last).Seconds())
				}
				last = now
				m.gen.Add(1)
			}
			if ev.Err != nil || ev.Finish != nil {
				m.e2e.Observe(time.Since(start).Seconds())
			}
			if done {
				select { // never block a consumer that has left
				case out <- ev:
				default:
				}
				continue
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				// The consumer may have left: from now on deliver only
				// what fits, so the engine's stream is always drained.
				done = true
				select {
				case out <- ev:
				default:
				}
			}
		}
	}()
	return out
}
