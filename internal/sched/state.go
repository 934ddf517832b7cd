package sched

import (
	"errors"
	"fmt"
)

// State is where a request is in its lifecycle (DESIGN I1).
type State uint8

// The lifecycle: Received → Admitted → Prefilling ⇄ Preempted →
// [Transferring] → Decoding → Finished; Received → Rejected; any live state →
// Aborted. A decoding request preempted by recompute goes back through
// Preempted and Prefilling. Finished, Rejected and Aborted are terminal.
//
// Disaggregated, one request has a part on each worker. The prefill worker's
// part goes Admitted → Prefilling → Transferring → Finished (once decode
// acknowledged its KV); the decode worker's part goes Admitted →
// Transferring (pages reserved, KV arriving) → Decoding → Finished.
const (
	StateReceived State = iota
	StateAdmitted
	StatePrefilling
	StatePreempted
	StateTransferring
	StateDecoding
	StateFinished
	StateRejected
	StateAborted
)

var stateNames = [...]string{"received", "admitted", "prefilling", "preempted",
	"transferring", "decoding", "finished", "rejected", "aborted"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Live reports whether s can still change: every state but the terminal ones.
// Every queue, step and handoff asks this, never a single "finished" flag.
func (s State) Live() bool { return s < StateFinished }

// Event is something that happens to a request.
type Event uint8

// The events the transition function accepts.
const (
	EvAdmit       Event = iota + 1 // admission checks passed
	EvReject                       // admission checks failed
	EvSchedule                     // the scheduler starts (or resumes) its prefill
	EvPreempt                      // its pages were taken back; it will recompute
	EvTransfer                     // prefill done, KV handed to a decode worker
	EvPrefillDone                  // prefill done (or transfer received); decode begins
	EvFinish                       // a stop condition was met
	EvAbort                        // cancelled, or an internal error
)

var eventNames = [...]string{"", "admit", "reject", "schedule", "preempt",
	"transfer", "prefill-done", "finish", "abort"}

func (e Event) String() string {
	if int(e) < len(eventNames) {
		return eventNames[e]
	}
	return fmt.Sprintf("event(%d)", uint8(e))
}

// ErrIllegalTransition matches every transition the lifecycle forbids.
var ErrIllegalTransition = errors.New("sched: illegal transition")

// edges lists every legal transition except aborts, which any live state takes.
var edges = map[State]map[Event]State{
	StateReceived:     {EvAdmit: StateAdmitted, EvReject: StateRejected},
	StateAdmitted:     {EvSchedule: StatePrefilling, EvTransfer: StateTransferring},
	StatePrefilling:   {EvPreempt: StatePreempted, EvTransfer: StateTransferring, EvPrefillDone: StateDecoding},
	StatePreempted:    {EvSchedule: StatePrefilling},
	StateTransferring: {EvPrefillDone: StateDecoding, EvFinish: StateFinished},
	StateDecoding:     {EvPreempt: StatePreempted, EvFinish: StateFinished},
}

// Transition is the one transition function: it returns the state after ev.
// Terminal states absorb every event (an abort of a finished request is a
// no-op; anything else is reported as illegal); an event a live state does
// not accept is an error and leaves the state as it was.
func Transition(s State, ev Event) (State, error) {
	if !s.Live() {
		if ev == EvAbort {
			return s, nil
		}
		return s, fmt.Errorf("sched: %s in terminal state %s: %w", ev, s, ErrIllegalTransition)
	}
	if ev == EvAbort {
		return StateAborted, nil
	}
	if next, ok := edges[s][ev]; ok {
		return next, nil
	}
	return s, fmt.Errorf("sched: %s in state %s: %w", ev, s, ErrIllegalTransition)
}
