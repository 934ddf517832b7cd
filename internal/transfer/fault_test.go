package transfer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// pageFault applies action to the PAGE frame numbered n (from 0) that the
// sender writes.
func pageFault(n int, f Fault) func(FrameInfo) Fault {
	seen := -1
	return func(fi FrameInfo) Fault {
		if fi.FromDialer && fi.Type == "PAGE" {
			seen++
			if seen == n {
				return f
			}
		}
		return Fault{}
	}
}

// typeFault applies action to every frame of type typ.
func typeFault(typ string, action FaultAction) func() func(FrameInfo) Fault {
	return func() func(FrameInfo) Fault {
		return func(fi FrameInfo) Fault {
			if fi.Type == typ {
				return Fault{Action: action}
			}
			return Fault{}
		}
	}
}

func TestFaultsEndBothSidesInTypedErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fault     func() func(FrameInfo) Fault // a fresh decision function per run
		sendWant  []error
		awaitWant []error
	}{
		{"corrupted frame fails the frame checksum", func() func(FrameInfo) Fault { return pageFault(2, Fault{Action: FaultCorrupt}) }, []error{ErrChecksum}, []error{ErrChecksum}},
		{"corruption behind a valid frame checksum fails the page checksum", func() func(FrameInfo) Fault { return pageFault(2, Fault{Action: FaultCorruptResealed}) }, []error{ErrChecksum}, []error{ErrChecksum}},
		{"missing frame is incomplete at the completion record", func() func(FrameInfo) Fault { return pageFault(4, Fault{Action: FaultDrop}) }, []error{ErrIncomplete}, []error{ErrIncomplete}},
		{"cut connection mid-transfer", func() func(FrameInfo) Fault { return pageFault(3, Fault{Action: FaultCut}) }, []error{ErrConnLost}, []error{ErrConnLost}},
		{"corrupted completion record", typeFault("DONE", FaultCorrupt), []error{ErrChecksum}, []error{ErrChecksum}},
		{"cut before the acknowledgement", typeFault("ACK", FaultCut), []error{ErrConnLost}, nil},
	} {
		for _, inner := range []Transport{NewMemTransport(), TCP()} {
			t.Run(fmt.Sprintf("%s over %T", tc.name, inner), func(t *testing.T) {
				ft := &FaultTransport{Inner: inner, Fault: tc.fault()}
				p := newPair(t, ft, ReceiverConfig{}, SenderConfig{})
				// One frame per layer of each page, so frame numbers are stable.
				ready := make(chan int, p.l.Layers)
				for n := 1; n <= p.l.Layers; n++ {
					ready <- n
				}
				start := time.Now()
				o := p.run(bg(t), Request{ID: 1, Nonce: 2, Tokens: 10}, 10, ready)
				wantErr(t, "send", o.send, tc.sendWant...)
				if tc.awaitWant == nil {
					// Decode verified everything before the cut: its pages are good.
					if o.await != nil {
						t.Fatalf("await: %v", o.await)
					}
				} else {
					wantErr(t, "await", o.await, tc.awaitWant...)
				}
				if d := time.Since(start); d > 3*time.Second {
					t.Errorf("both sides took %v to reach a terminal state", d)
				}
			})
		}
	}
}

func TestSlowTransferHitsTheReservationDeadline(t *testing.T) {
	ft := &FaultTransport{Inner: NewMemTransport(), Fault: func(fi FrameInfo) Fault {
		if fi.Type == "PAGE" {
			return Fault{Action: FaultDelay, Delay: 40 * time.Millisecond}
		}
		return Fault{}
	}}
	p := newPair(t, ft, ReceiverConfig{TransferTimeout: 100 * time.Millisecond}, SenderConfig{})
	o := p.run(bg(t), Request{ID: 1, Nonce: 2, Tokens: 40}, 40, nil)
	wantErr(t, "await", o.await, ErrDeadline)
	if o.send == nil {
		t.Fatal("send succeeded after decode gave up")
	}
}

func TestSlowTransferHitsTheSendDeadline(t *testing.T) {
	ft := &FaultTransport{Inner: NewMemTransport(), Fault: func(fi FrameInfo) Fault {
		if fi.Type == "PAGE" {
			return Fault{Action: FaultDelay, Delay: 40 * time.Millisecond}
		}
		return Fault{}
	}}
	p := newPair(t, ft, ReceiverConfig{}, SenderConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	o := p.run(ctx, Request{ID: 1, Nonce: 2, Tokens: 40}, 40, make(chan int, 1))
	wantErr(t, "send", o.send, ErrDeadline)
	if o.await == nil {
		t.Fatal("decode accepted a transfer prefill abandoned")
	}
}

// A receiver that stops reading fails the sender's write within StallTimeout.
func TestStalledReceiverFailsTheSenderWrite(t *testing.T) {
	p := newPair(t, NewMemTransport(), ReceiverConfig{}, SenderConfig{StallTimeout: 50 * time.Millisecond})
	sink := p.lg.sink(p.l)
	unblock := make(chan struct{})
	sink.onWrite = func() { <-unblock }
	pend, err := p.recv.Expect(1, 1, 400, sink)
	if err != nil {
		t.Fatal(err)
	}
	src := p.lg.source(p.l, 1)
	src.acquire()
	err = p.send.Send(bg(t), Request{ID: 1, Nonce: 1, Tokens: 400}, src, nil)
	src.release()
	close(unblock)
	wantErr(t, "send", err, ErrDeadline)
	wantErr(t, "await", pend.Await(bg(t)), ErrConnLost)
}

func TestCancelFromPrefillAbortsDecode(t *testing.T) {
	p := newPair(t, NewMemTransport(), ReceiverConfig{}, SenderConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan int, 1)
	ready <- 1 // one layer streams, then prefill gives up
	sink := p.lg.sink(p.l)
	go func() {
		for sink.count() < p.l.Pages(10) {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	o := p.runWith(ctx, Request{ID: 1, Nonce: 2, Tokens: 10}, 10, ready, sink, p.lg.source(p.l, 1))
	wantErr(t, "send", o.send, ErrCanceled)
	wantErr(t, "await", o.await, ErrAborted, ErrCanceled)
}

func TestCancelFromDecodeAbortsPrefill(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cancel func(*Pending)
		want   error
	}{
		{"Cancel", func(p *Pending) { p.Cancel() }, ErrCanceled},
		{"Await context deadline", func(p *Pending) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			defer cancel()
			p.Await(ctx)
		}, ErrDeadline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t, NewMemTransport(), ReceiverConfig{}, SenderConfig{})
			sink, src := p.lg.sink(p.l), p.lg.source(p.l, 1)
			pend, err := p.recv.Expect(1, 2, 10, sink)
			if err != nil {
				t.Fatal(err)
			}
			ready := make(chan int, 1)
			ready <- 1
			go func() {
				for sink.count() < p.l.Pages(10) {
					time.Sleep(time.Millisecond)
				}
				tc.cancel(pend)
			}()
			src.acquire()
			start := time.Now()
			err = p.send.Send(bg(t), Request{ID: 1, Nonce: 2, Tokens: 10}, src, ready)
			src.release()
			wantErr(t, "send", err, ErrAborted, tc.want)
			wantErr(t, "await", pend.Await(bg(t)), tc.want)
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("prefill learned of the abort after %v", d)
			}
		})
	}
}

func TestCloseReleasesEveryReservation(t *testing.T) {
	p := newPair(t, NewMemTransport(), ReceiverConfig{}, SenderConfig{})
	var pends []*Pending
	for id := uint64(1); id <= 3; id++ {
		pend, err := p.recv.Expect(id, 1, 10, p.lg.sink(p.l))
		if err != nil {
			t.Fatal(err)
		}
		pends = append(pends, pend)
	}
	p.recv.Close()
	for _, pend := range pends {
		wantErr(t, "await", pend.Await(bg(t)), ErrClosed)
	}
	if _, err := p.recv.Expect(9, 1, 10, newFakeSink(p.l)); !errors.Is(err, ErrClosed) {
		t.Fatalf("expect after close: %v", err)
	}
}

func TestSourceFailureAbortsBothSides(t *testing.T) {
	p := newPair(t, NewMemTransport(), ReceiverConfig{}, SenderConfig{})
	sink := p.lg.sink(p.l)
	src := p.lg.source(p.l, 1)
	src.fail = errors.New("page evicted")
	pend, err := p.recv.Expect(1, 1, 10, sink)
	if err != nil {
		t.Fatal(err)
	}
	src.acquire()
	err = p.send.Send(bg(t), Request{ID: 1, Nonce: 1, Tokens: 10}, src, nil)
	src.release()
	if err == nil || !strings.Contains(err.Error(), "page evicted") {
		t.Fatalf("send: %v", err)
	}
	wantErr(t, "await", pend.Await(bg(t)), ErrAborted)
}
