// Package incident names, as one narrow interface, every check that the
// reproduction of DESIGN.md's incident switches off, so that those checks
// hold no build-tag branches of their own. The checks ask Active(); in every
// normal build it is Strict, which refuses what the invariants refuse. Only
// a binary built with the tag leakrepro links a different Policy (package
// internal/leakrepro, pulled in by cmd/bulkhead's leakrepro.go) and installs
// it at init, before any check runs.
package incident

// Policy answers, for each guard the incident defeated, whether to defeat it.
type Policy interface {
	// Placeholder decides what admission does with a prompt that fails the
	// length check (DESIGN I4). ok false refuses it. ok true admits the
	// returned placeholder prompt instead, run as if all but its last
	// token's KV were already in the pages it is given.
	Placeholder(prompt []int32, maxContext, poolTokens int) (placeholder []int32, ok bool)
	// PassOversized reports whether the API, the gateway and the workers
	// forward an oversized request instead of refusing it (I4, I5).
	PassOversized() bool
	// SkipWrittenCheck reports whether the ownership check lets a step read
	// a page slot that its owner never wrote (I2).
	SkipWrittenCheck() bool
	// SkipPrefixCache reports whether the scheduler bypasses the prefix
	// cache, so freed pages go straight back to the free list.
	SkipPrefixCache() bool
}

// Strict is the policy of every release build: no guard is defeated.
type Strict struct{}

// Placeholder refuses every oversized prompt.
func (Strict) Placeholder([]int32, int, int) ([]int32, bool) { return nil, false }

// PassOversized is false: oversized requests are refused where they arrive.
func (Strict) PassOversized() bool { return false }

// SkipWrittenCheck is false: reading an unwritten slot fails the check.
func (Strict) SkipWrittenCheck() bool { return false }

// SkipPrefixCache is false: the prefix cache runs.
func (Strict) SkipPrefixCache() bool { return false }

var active Policy = Strict{}

// Active is the policy the checks consult.
func Active() Policy { return active }

// Install replaces the policy. It is meant for an init function, before
// any request exists; it is not synchronised with the checks that read it.
func Install(p Policy) {
	if p == nil {
		p = Strict{}
	}
	active = p
}
