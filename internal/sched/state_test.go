package sched

import (
	"errors"
	"testing"

	"pgregory.net/rapid"
)

var allStates = []State{StateReceived, StateAdmitted, StatePrefilling, StatePreempted,
	StateTransferring, StateDecoding, StateFinished, StateRejected, StateAborted}

var allEvents = []Event{EvAdmit, EvReject, EvSchedule, EvPreempt, EvTransfer, EvPrefillDone, EvFinish, EvAbort}

func TestTransitionFollowsTheLifecycle(t *testing.T) {
	// The lifecycle of DESIGN I1, written out independently of the edge table.
	legal := map[[2]int]State{}
	add := func(from State, ev Event, to State) { legal[[2]int{int(from), int(ev)}] = to }
	add(StateReceived, EvAdmit, StateAdmitted)
	add(StateReceived, EvReject, StateRejected)
	add(StateAdmitted, EvSchedule, StatePrefilling)
	add(StatePrefilling, EvPreempt, StatePreempted)
	add(StatePreempted, EvSchedule, StatePrefilling)
	add(StatePrefilling, EvTransfer, StateTransferring)
	add(StateTransferring, EvPrefillDone, StateDecoding)
	add(StatePrefilling, EvPrefillDone, StateDecoding)
	add(StateDecoding, EvPreempt, StatePreempted)
	add(StateDecoding, EvFinish, StateFinished)
	// Disaggregated: decode reserves pages and awaits KV (Admitted →
	// Transferring); prefill ends once decode acknowledged (Transferring →
	// Finished).
	add(StateAdmitted, EvTransfer, StateTransferring)
	add(StateTransferring, EvFinish, StateFinished)
	for _, s := range allStates {
		if s.Live() {
			add(s, EvAbort, StateAborted)
		}
	}
	for _, s := range allStates {
		for _, ev := range allEvents {
			got, err := Transition(s, ev)
			want, ok := legal[[2]int{int(s), int(ev)}]
			switch {
			case ok && (err != nil || got != want):
				t.Errorf("%s --%s--> %s, %v; want %s", s, ev, got, err, want)
			case !ok && !s.Live() && ev == EvAbort:
				if err != nil || got != s {
					t.Errorf("abort of terminal %s = %s, %v; want absorbed", s, got, err)
				}
			case !ok && (!errors.Is(err, ErrIllegalTransition) || got != s):
				t.Errorf("%s --%s--> %s, %v; want ErrIllegalTransition and no change", s, ev, got, err)
			}
		}
	}
}

func TestLiveIsFalseExactlyForTerminalStates(t *testing.T) {
	for _, s := range allStates {
		terminal := s == StateFinished || s == StateRejected || s == StateAborted
		if s.Live() == terminal {
			t.Errorf("%s.Live() = %v", s, s.Live())
		}
	}
}

func TestLifecycleUnderRandomEvents(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := StateReceived
		admitted := false
		for _, ev := range rapid.SliceOf(rapid.SampledFrom(allEvents)).Draw(t, "events") {
			next, err := Transition(s, ev)
			if !s.Live() && next != s {
				t.Fatalf("terminal %s left for %s on %s", s, next, ev)
			}
			if err != nil && next != s {
				t.Fatalf("failed %s moved %s to %s", ev, s, next)
			}
			if next == StateRejected && s != StateRejected && (s != StateReceived || admitted) {
				t.Fatalf("rejected from %s after admission", s)
			}
			if s.Live() && ev == EvAbort && next != StateAborted {
				t.Fatalf("abort from live %s gave %s", s, next)
			}
			if next == StateDecoding && !admitted {
				t.Fatal("decoding without admission")
			}
			admitted = admitted || next == StateAdmitted
			s = next
		}
	})
}
