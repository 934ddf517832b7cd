package transfer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"pgregory.net/rapid"
)

func bg(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestTransferDeliversEveryBlockAndAcks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tr     func() Transport
		layout Layout
		tokens int
	}{
		{"mem partial last page", func() Transport { return NewMemTransport() }, testLayout, 10},
		{"mem single token", func() Transport { return NewMemTransport() }, testLayout, 1},
		{"mem whole pages F32", func() Transport { return NewMemTransport() }, Layout{PageSize: 8, DType: gguf.F32, Layers: 2, KVDim: 4}, 64},
		{"tcp loopback", TCP, testLayout, 37},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t, tc.tr(), ReceiverConfig{Layout: tc.layout}, SenderConfig{})
			o := p.run(bg(t), Request{ID: 7, Nonce: 99, Tokens: tc.tokens}, tc.tokens, nil)
			if o.send != nil || o.await != nil {
				t.Fatalf("send: %v, await: %v", o.send, o.await)
			}
			o.sink.verify(t, 7, tc.tokens)
		})
	}
}

// Layers arrive one at a time, as prefill computes them; each batch of
// pages is on the wire before the next layer is ready.
func TestTransferStreamsLayersAsTheyBecomeReady(t *testing.T) {
	p := newPair(t, NewMemTransport(), ReceiverConfig{}, SenderConfig{})
	ready := make(chan int)
	sink := p.lg.sink(p.l)
	src := p.lg.source(p.l, 3)
	pend, err := p.recv.Expect(3, 1, 10, sink)
	if err != nil {
		t.Fatal(err)
	}
	src.acquire()
	sendErr := make(chan error, 1)
	go func() { sendErr <- p.send.Send(bg(t), Request{ID: 3, Nonce: 1, Tokens: 10}, src, ready); src.release() }()
	pages := p.l.Pages(10)
	for layer := 1; layer <= p.l.Layers; layer++ {
		ready <- layer
		deadline := time.Now().Add(5 * time.Second)
		for sink.count() < layer*pages && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if got := sink.count(); got != layer*pages {
			t.Fatalf("after %d ready layers decode holds %d blocks, want %d", layer, got, layer*pages)
		}
	}
	if err := <-sendErr; err != nil {
		t.Fatal(err)
	}
	if err := pend.Await(bg(t)); err != nil {
		t.Fatal(err)
	}
	sink.free()
	sink.verify(t, 3, 10)
}

// Property: for any layout, prompt length and schedule of ready layers, the
// decode side ends up with exactly the prefill side's bytes.
func TestTransferPropertyAnyLayoutAndSchedule(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		l := Layout{
			ModelDigest: [32]byte{byte(rapid.IntRange(0, 255).Draw(rt, "digest"))},
			PageSize:    rapid.IntRange(1, 9).Draw(rt, "pageSize"),
			DType:       rapid.SampledFrom([]gguf.Type{gguf.F16, gguf.F32}).Draw(rt, "dtype"),
			Layers:      rapid.IntRange(1, 6).Draw(rt, "layers"),
			KVDim:       rapid.IntRange(1, 12).Draw(rt, "kvDim"),
		}
		tokens := rapid.IntRange(1, 50).Draw(rt, "tokens")
		var steps []int
		for n := 0; n < l.Layers; {
			n = rapid.IntRange(n+1, l.Layers).Draw(rt, "step")
			steps = append(steps, n)
		}
		tr := NewMemTransport()
		r, err := Listen("d", ReceiverConfig{Layout: l, Transport: tr})
		if err != nil {
			rt.Fatal(err)
		}
		defer r.Close()
		s, err := Dial(context.Background(), SenderConfig{Layout: l, Transport: tr, Addr: "d"})
		if err != nil {
			rt.Fatal(err)
		}
		defer s.Close()
		sink, src := newFakeSink(l), &fakeSource{l: l, seed: 5}
		pend, err := r.Expect(5, 6, tokens, sink)
		if err != nil {
			rt.Fatal(err)
		}
		ready := make(chan int, len(steps))
		for _, n := range steps {
			ready <- n
		}
		src.acquire()
		err = s.Send(context.Background(), Request{ID: 5, Nonce: 6, Tokens: tokens}, src, ready)
		src.release()
		if err != nil {
			rt.Fatalf("send: %v", err)
		}
		if err := pend.Await(context.Background()); err != nil {
			rt.Fatalf("await: %v", err)
		}
		if len(sink.blocks) != l.Pages(tokens)*l.Layers || sink.dropped != 0 || src.bad != 0 {
			rt.Fatalf("%d blocks, dropped %d, %d unleased reads", len(sink.blocks), sink.dropped, src.bad)
		}
		for key, b := range sink.blocks {
			for i, x := range b {
				if x != pattern(5, key[0], key[1], i) {
					rt.Fatalf("block %v byte %d differs", key, i)
				}
			}
		}
	})
}

func TestSenderReusesConnectionAfterAck(t *testing.T) {
	ft := &FaultTransport{Inner: NewMemTransport()}
	p := newPair(t, ft, ReceiverConfig{}, SenderConfig{})
	for id := uint64(1); id <= 3; id++ {
		o := p.run(bg(t), Request{ID: id, Nonce: id, Tokens: 10}, 10, nil)
		if o.send != nil || o.await != nil {
			t.Fatalf("request %d: send %v, await %v", id, o.send, o.await)
		}
	}
	// One dialed end and one accepted end: all three requests shared them.
	if n := ft.conns.Load(); n != 2 {
		t.Fatalf("%d connection ends opened for 3 sequential requests, want 2", n)
	}
}

func TestConcurrentRequestsEachGetTheirOwnBytes(t *testing.T) {
	p := newPair(t, TCP(), ReceiverConfig{}, SenderConfig{})
	n := 8
	if short() {
		n = 4
	}
	var wg sync.WaitGroup
	outs := make([]outcome, n)
	for i := range n {
		wg.Go(func() {
			outs[i] = p.run(bg(t), Request{ID: uint64(100 + i), Nonce: 1, Tokens: 5 + 3*i}, 5+3*i, nil)
		})
	}
	wg.Wait()
	for i, o := range outs {
		if o.send != nil || o.await != nil {
			t.Fatalf("request %d: send %v, await %v", i, o.send, o.await)
		}
		o.sink.verify(t, uint64(100+i), 5+3*i)
	}
}

func TestClosedSenderRefusesToSend(t *testing.T) {
	p := newPair(t, NewMemTransport(), ReceiverConfig{}, SenderConfig{})
	p.send.Close()
	src := p.lg.source(p.l, 1)
	src.acquire()
	err := p.send.Send(bg(t), Request{ID: 1, Nonce: 1, Tokens: 10}, src, nil)
	src.release()
	wantErr(t, "send", err, ErrClosed)
	if src.reads != 0 {
		t.Fatalf("a closed sender read %d blocks", src.reads)
	}
}
