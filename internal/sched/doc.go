// Package sched decides what runs in each forward step. It holds the request
// lifecycle (one state machine, one transition function: DESIGN I1),
// admission before any allocation (I4), the startup capacity check (I3), and
// a continuous-batching scheduler: a per-step token budget shared by decodes
// and chunked prefills, preemption by recompute when pages run out,
// cancellation, round-robin fair share across tenants when filling the
// running set, and prefix-cache reuse on admission.
//
// Everything here is pure and deterministic: no goroutines, no clock, no I/O.
// The engine calls Step for a Plan, runs one forward pass over it, and
// reports the sampled tokens back with Complete. A Scheduler is not safe for
// concurrent use; the engine calls it from its step loop, between forward
// passes.
package sched
