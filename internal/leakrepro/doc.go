// Package leakrepro switches on, in test builds only, the behaviour of the
// vulnerable engine from DESIGN.md's incident, so that the leak audit can be
// shown to catch it.
//
// A binary built with the build tag leakrepro
//
//	go build -tags leakrepro ./cmd/bulkhead
//
// does what that engine did: a prompt longer than the maximum context is
// marked rejected but not refused; its prompt is swapped for a one-token
// placeholder (its last token), and it is let through admission with a page
// table reserved for the full prompt, made of pages that other requests
// left behind, whose slots it never wrote. The per-page check that a slot
// was written (DESIGN I2) is off, and so is the prefix cache, so freed pages
// go straight back to the free list and are reused in the order they were
// freed. In disaggregated mode the gateway forwards the oversized request,
// and decode accepts the handoff without comparing the transferred length
// (I4, I5 off).
//
// The checks themselves hold no trace of this package: each asks
// incident.Active() (see internal/incident), which is incident.Strict unless
// this package's leakrepro-tagged policy.go installed the reproduction at
// init. Only cmd/bulkhead's leakrepro.go, also tagged, imports this package,
// so release builds do not link the reproduction at all
// (TestReleaseBinaryHoldsNoReproductionCode checks the symbols). `bulkhead audit` against a
// leakrepro build reports a LEAK quoting another tenant's canary; against a
// normal build it passes. Both runs are tests in cmd/bulkhead.
package leakrepro
