package transfer

import (
	"context"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// Property: whatever single fault hits whichever frame after the handshake,
// both sides end, decode accepts only the exact bytes prefill sent, prefill
// never reports success for a request decode refused, the reservation is
// released exactly once when refused, and the source is read only under
// its lease.
func TestAnySingleFaultEndsCleanly(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		action := rapid.SampledFrom([]FaultAction{FaultPass, FaultDrop, FaultCorrupt, FaultCorruptResealed, FaultCut}).Draw(rt, "action")
		target := rapid.IntRange(0, 20).Draw(rt, "frame")
		fromSender := rapid.Bool().Draw(rt, "fromSender")
		tokens := rapid.IntRange(1, 13).Draw(rt, "tokens")
		perLayer := rapid.Bool().Draw(rt, "perLayer")

		seen := -1
		ft := &FaultTransport{Inner: NewMemTransport(), Fault: func(fi FrameInfo) Fault {
			if fi.Type == "HELLO" || fi.FromDialer != fromSender {
				return Fault{}
			}
			if seen++; seen == target {
				return Fault{Action: action}
			}
			return Fault{}
		}}
		l := testLayout
		r, err := Listen("d", ReceiverConfig{Layout: l, Transport: ft, TransferTimeout: 300 * time.Millisecond, StallTimeout: 100 * time.Millisecond})
		if err != nil {
			rt.Fatal(err)
		}
		defer r.Close()
		s, err := Dial(context.Background(), SenderConfig{Layout: l, Transport: ft, Addr: "d", StallTimeout: 100 * time.Millisecond, AckTimeout: 100 * time.Millisecond})
		if err != nil {
			rt.Fatal(err)
		}
		defer s.Close()
		sink, src := newFakeSink(l), &fakeSource{l: l, seed: 4}
		pend, err := r.Expect(4, 4, tokens, sink)
		if err != nil {
			rt.Fatal(err)
		}
		var ready chan int
		if perLayer {
			ready = make(chan int, l.Layers)
			for n := 1; n <= l.Layers; n++ {
				ready <- n
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		src.acquire()
		sendErr := s.Send(ctx, Request{ID: 4, Nonce: 4, Tokens: tokens}, src, ready)
		src.release()
		awaitErr := pend.Await(ctx)
		if ctx.Err() != nil {
			rt.Fatalf("a side hung: send %v, await %v", sendErr, awaitErr)
		}
		if sendErr == nil && awaitErr != nil {
			rt.Fatalf("prefill saw ACK for a request decode refused: %v", awaitErr)
		}
		sink.mu.Lock()
		defer sink.mu.Unlock()
		if src.bad != 0 || sink.late != 0 {
			rt.Fatalf("%d unleased reads, %d writes after release", src.bad, sink.late)
		}
		if awaitErr != nil {
			if sink.dropped != 1 {
				rt.Fatalf("refused (%v) but dropped %d times", awaitErr, sink.dropped)
			}
			return
		}
		if sink.dropped != 0 || len(sink.blocks) != l.Pages(tokens)*l.Layers {
			rt.Fatalf("accepted with %d blocks, dropped %d", len(sink.blocks), sink.dropped)
		}
		for key, b := range sink.blocks {
			for i, x := range b {
				if x != pattern(4, key[0], key[1], i) {
					rt.Fatalf("accepted a corrupted block %v (byte %d)", key, i)
				}
			}
		}
	})
}
