package engine

import (
	"github.com/bulkhead-llm/bulkhead/internal/sample"
	"github.com/bulkhead-llm/bulkhead/internal/sched"
)

// Msg is one input to the Machine. Every input is one of the types below,
// stepped in by Machine.Step, and each type has exactly one transition
// function (named in its comment). They are passed as pointers so the
// shell can reuse one StepResultMsg every step without allocating.
type Msg interface{ msg() }

// SubmitMsg starts a request admitted by admission.admit (Submit and
// Prefill): it joins the scheduler's queue. Transition: Machine.submit.
type SubmitMsg struct {
	ID      uint64
	Req     Request
	Adm     *sched.Admitted
	Sampler *sample.Sampler
	StopSet []int32 // stop tokens and, unless IgnoreEOS, the model's EOG
}

// ReserveMsg asks for pages for the KV of every prompt token but the last
// of a decode request whose KV will arrive by transfer; a Reply answers
// it, now or once pages free. Transition: Machine.reserve.
type ReserveMsg struct{ SubmitMsg }

// CancelMsg is the request's context ending. Transition: Machine.cancel.
type CancelMsg struct{ ID uint64 }

// KVVerifiedMsg says the transfer into a reservation's pages completed and
// verified (DESIGN I5) and will not touch them again. Transition:
// Machine.transferDone.
type KVVerifiedMsg struct{ ID uint64 }

// TransferFailedMsg says the transfer into a reservation's pages failed;
// it no longer writes them. Transition: Machine.transferDone.
type TransferFailedMsg struct {
	ID  uint64
	Err error
}

// HandoffReleasedMsg says the transfer reading a prefill handoff's leased
// pages returned (Err nil: decode acknowledged). Transition:
// Machine.handoffReleased.
type HandoffReleasedMsg struct {
	ID  uint64
	Err error
}

// DeadlinePassedMsg says a reservation's bounded wait (Config.ReserveWait)
// ran out; a reservation already granted ignores it. Transition:
// Machine.deadlinePassed.
type DeadlinePassedMsg struct{ ID uint64 }

// CloseMsg stops the machine: waiting reservations are refused, every
// request but a transfer in flight ends with ErrShuttingDown, no further
// batch is planned. Transition: Machine.close.
type CloseMsg struct{}

// GraceOverMsg ends what Close left: transfers in flight that did not
// report within Config.CloseGrace lose their pages and leases, so the pool
// drains. Transition: Machine.graceOver.
type GraceOverMsg struct{}

// StepResultMsg is the forward pass of the batch the last Ready handed
// out: one row of logits per batch sequence, or the error it failed with.
// Transition: Machine.stepResult.
type StepResultMsg struct {
	Logits [][]float32
	Err    error
}

func (*SubmitMsg) msg()          {}
func (*ReserveMsg) msg()         {}
func (*CancelMsg) msg()          {}
func (*KVVerifiedMsg) msg()      {}
func (*TransferFailedMsg) msg()  {}
func (*HandoffReleasedMsg) msg() {}
func (*DeadlinePassedMsg) msg()  {}
func (*CloseMsg) msg()           {}
func (*GraceOverMsg) msg()       {}
func (*StepResultMsg) msg()      {}
