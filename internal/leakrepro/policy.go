//go:build leakrepro

package leakrepro

import "github.com/bulkhead-llm/bulkhead/internal/incident"

// reproduction is the vulnerable engine's policy: every guard off.
type reproduction struct{}

// Placeholder keeps an oversized request with its last token as a one-token
// placeholder, positioned as if the rest of a (clipped) prompt were already
// in its pages. 32 positions are left for output.
func (reproduction) Placeholder(prompt []int32, maxContext, poolTokens int) ([]int32, bool) {
	if poolTokens <= 0 {
		poolTokens = maxContext
	}
	reserve := max(1, min(len(prompt), maxContext, poolTokens)-32)
	p := make([]int32, reserve)
	p[reserve-1] = prompt[len(prompt)-1]
	return p, true
}

func (reproduction) PassOversized() bool    { return true }
func (reproduction) SkipWrittenCheck() bool { return true }
func (reproduction) SkipPrefixCache() bool  { return true }

func init() { incident.Install(reproduction{}) }
