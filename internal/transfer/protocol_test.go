package transfer

import (
	"bufio"
	"context"
	"errors"
	"hash/crc32"
	"sync"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

func TestHandshakeRefusesMismatchNamingTheValue(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Layout)
		field  string
	}{
		{"model digest", func(l *Layout) { l.ModelDigest[31] ^= 1 }, "model digest"},
		{"page size", func(l *Layout) { l.PageSize = 16 }, "page size"},
		{"dtype", func(l *Layout) { l.DType = gguf.F32 }, "KV dtype"},
		{"layer count", func(l *Layout) { l.Layers = 30 }, "layer count"},
		{"kv dim", func(l *Layout) { l.KVDim = 192 }, "KV dim"},
		{"max context", func(l *Layout) { l.MaxContext = 512 }, "max context"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewMemTransport()
			var mu sync.Mutex
			var recvErr error
			r, err := Listen("d", ReceiverConfig{Layout: testLayout, Transport: tr, OnError: func(err error) {
				mu.Lock()
				recvErr = err
				mu.Unlock()
			}})
			if err != nil {
				t.Fatal(err)
			}
			l := testLayout
			tc.change(&l)
			_, err = Dial(bg(t), SenderConfig{Layout: l, Transport: tr, Addr: "d"})
			var me *MismatchError
			if !errors.As(err, &me) || me.Field != tc.field || !errors.Is(err, ErrLayoutMismatch) {
				t.Fatalf("dial: got %v, want a mismatch naming %q", err, tc.field)
			}
			r.Close() // waits for the connection goroutine, which reported
			mu.Lock()
			defer mu.Unlock()
			if !errors.As(recvErr, &me) || me.Field != tc.field {
				t.Fatalf("receiver reported %v, want a mismatch naming %q", recvErr, tc.field)
			}
		})
	}
}

func TestHandshakeRefusesOtherProtocolVersion(t *testing.T) {
	tr := NewMemTransport()
	r, err := Listen("d", ReceiverConfig{Layout: testLayout, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	nc, err := tr.Dial(bg(t), "d")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	hello := appendFrame(nil, frameHello, 0, appendHello(nil, testLayout))
	// Another version, resealed so only the version is wrong.
	hello[2] = Version + 1
	psum := crc32.Checksum(hello[headerSize:], castagnoli)
	le.PutUint32(hello[24:], crc32.Update(psum, castagnoli, hello[:24]))
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write(hello); err != nil {
		t.Fatal(err)
	}
	fr := frameReader{r: bufio.NewReader(nc), maxPayload: 4096}
	h, _, _, err := fr.next()
	if err != nil || h.typ != frameHello || h.version != Version {
		t.Fatalf("receiver answered %v version %d, %v; want its own HELLO", h.typ, h.version, err)
	}
	if _, _, _, err := fr.next(); err == nil {
		t.Fatal("receiver kept a connection speaking another protocol version")
	}
}

func TestFramesForUnknownRequestsAreRejectedAndNeverWritten(t *testing.T) {
	tr := NewMemTransport()
	p := newPair(t, tr, ReceiverConfig{}, SenderConfig{})
	bystander := p.lg.sink(p.l)
	pend, err := p.recv.Expect(1, 1, 10, bystander)
	if err != nil {
		t.Fatal(err)
	}
	src := p.lg.source(p.l, 9)
	src.acquire()
	defer src.release()

	t.Run("PAGE without BEGIN", func(t *testing.T) {
		rc := dialRaw(t, tr, p.recv.Addr(), p.l)
		before := p.recv.Rejected()
		rc.page(src, 99, 10, 0, 0)
		typ, err := rc.verdict()
		if typ != frameNack || !errors.Is(err, ErrUnknownRequest) {
			t.Fatalf("got %v %v, want NACK for an unknown request", typ, err)
		}
		if p.recv.Rejected() != before+1 {
			t.Fatalf("rejected count %d, want %d", p.recv.Rejected(), before+1)
		}
	})
	t.Run("BEGIN for an id decode never expected", func(t *testing.T) {
		err := p.send.Send(bg(t), Request{ID: 99, Nonce: 1, Tokens: 10}, src, nil)
		wantErr(t, "send", err, ErrUnknownRequest)
	})
	t.Run("BEGIN with the wrong nonce leaves the reservation alone", func(t *testing.T) {
		err := p.send.Send(bg(t), Request{ID: 1, Nonce: 2, Tokens: 10}, src, nil)
		wantErr(t, "send", err, ErrUnknownRequest)
	})
	t.Run("frames for another request inside a stream", func(t *testing.T) {
		other := p.lg.sink(p.l)
		op, err := p.recv.Expect(2, 1, 10, other)
		if err != nil {
			t.Fatal(err)
		}
		rc := dialRaw(t, tr, p.recv.Addr(), p.l)
		rc.control(frameBegin, 2, appendBegin(nil, begin{nonce: 1, tokens: 10}))
		rc.page(src, 1, 10, 0, 0) // request 1's page on request 2's stream
		if typ, err := rc.verdict(); typ != frameNack || !errors.Is(err, ErrProtocol) {
			t.Fatalf("got %v %v, want NACK", typ, err)
		}
		wantErr(t, "await", op.Await(bg(t)), ErrProtocol)
	})
	if n := bystander.count(); n != 0 {
		t.Fatalf("request 1's sink got %d writes from frames that were not its own", n)
	}
	// The reservation survived all of it and still completes.
	if err := p.send.Send(bg(t), Request{ID: 1, Nonce: 1, Tokens: 10}, src, nil); err != nil {
		t.Fatal(err)
	}
	if err := pend.Await(bg(t)); err != nil {
		t.Fatal(err)
	}
	bystander.free()
	writes := bystander.count()
	t.Run("BEGIN for a finished request", func(t *testing.T) {
		err := p.send.Send(bg(t), Request{ID: 1, Nonce: 1, Tokens: 10}, src, nil)
		wantErr(t, "send", err, ErrUnknownRequest)
		if bystander.count() != writes {
			t.Fatal("a finished request's pages were written again")
		}
	})
}

func TestWrongTokenCountIsRefused(t *testing.T) {
	t.Run("at BEGIN", func(t *testing.T) {
		p := newPair(t, NewMemTransport(), ReceiverConfig{}, SenderConfig{})
		o := p.run(bg(t), Request{ID: 1, Nonce: 1, Tokens: 1}, 10, nil)
		wantErr(t, "send", o.send, ErrTokenCount)
		wantErr(t, "await", o.await, ErrTokenCount)
		if n := o.sink.count(); n != 0 {
			t.Fatalf("%d blocks written for a refused request", n)
		}
	})
	t.Run("in the completion record", func(t *testing.T) {
		tr := NewMemTransport()
		p := newPair(t, tr, ReceiverConfig{}, SenderConfig{})
		sink := p.lg.sink(p.l)
		pend, err := p.recv.Expect(1, 1, 10, sink)
		if err != nil {
			t.Fatal(err)
		}
		src := p.lg.source(p.l, 1)
		src.acquire()
		defer src.release()
		rc := dialRaw(t, tr, p.recv.Addr(), p.l)
		rc.control(frameBegin, 1, appendBegin(nil, begin{nonce: 1, tokens: 10}))
		sums := rc.sendAll(src, 1, 10)
		rc.control(frameDone, 1, appendDone(nil, done{nonce: 1, tokens: 9, layout: p.l, sums: sums}))
		if typ, err := rc.verdict(); typ != frameNack || !errors.Is(err, ErrTokenCount) {
			t.Fatalf("got %v %v, want NACK for the token count", typ, err)
		}
		wantErr(t, "await", pend.Await(bg(t)), ErrTokenCount)
	})
	t.Run("completion record with another model digest", func(t *testing.T) {
		tr := NewMemTransport()
		p := newPair(t, tr, ReceiverConfig{}, SenderConfig{})
		pend, err := p.recv.Expect(1, 1, 10, p.lg.sink(p.l))
		if err != nil {
			t.Fatal(err)
		}
		src := p.lg.source(p.l, 1)
		src.acquire()
		defer src.release()
		rc := dialRaw(t, tr, p.recv.Addr(), p.l)
		rc.control(frameBegin, 1, appendBegin(nil, begin{nonce: 1, tokens: 10}))
		sums := rc.sendAll(src, 1, 10)
		other := p.l
		other.ModelDigest[0] ^= 0xff
		rc.control(frameDone, 1, appendDone(nil, done{nonce: 1, tokens: 10, layout: other, sums: sums}))
		if typ, err := rc.verdict(); typ != frameNack || !errors.Is(err, ErrLayoutMismatch) {
			t.Fatalf("got %v %v, want NACK for the digest", typ, err)
		}
		wantErr(t, "await", pend.Await(bg(t)), ErrLayoutMismatch)
	})
	t.Run("the same block twice", func(t *testing.T) {
		tr := NewMemTransport()
		p := newPair(t, tr, ReceiverConfig{}, SenderConfig{})
		pend, err := p.recv.Expect(1, 1, 10, p.lg.sink(p.l))
		if err != nil {
			t.Fatal(err)
		}
		src := p.lg.source(p.l, 1)
		src.acquire()
		defer src.release()
		rc := dialRaw(t, tr, p.recv.Addr(), p.l)
		rc.control(frameBegin, 1, appendBegin(nil, begin{nonce: 1, tokens: 10}))
		rc.page(src, 1, 10, 0, 0)
		rc.page(src, 1, 10, 0, 0)
		wantErr(t, "await", pend.Await(bg(t)), ErrProtocol)
	})
}

func TestExpectRefusesDuplicateAndEmptyReservations(t *testing.T) {
	p := newPair(t, NewMemTransport(), ReceiverConfig{}, SenderConfig{})
	pend, err := p.recv.Expect(1, 1, 10, p.lg.sink(p.l))
	if err != nil {
		t.Fatal(err)
	}
	dup := p.lg.sink(p.l)
	if _, err := p.recv.Expect(1, 2, 10, dup); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("second Expect: %v", err)
	}
	dup.free()
	empty := p.lg.sink(p.l)
	if _, err := p.recv.Expect(3, 1, 0, empty); err == nil {
		t.Fatal("Expect accepted a zero-token prompt")
	}
	empty.free()
	pend.Cancel()
	wantErr(t, "await", pend.Await(context.Background()), ErrCanceled)
}

// A slow decode worker slows prefill: the bytes prefill has read from its
// pages but decode has not yet stored stay bounded by the fixed buffers
// (sender batch, one frame, receiver read buffer), however long the prompt.
func TestSlowReceiverBoundsWhatTheSenderBuffers(t *testing.T) {
	l := Layout{PageSize: 16, DType: gguf.F16, Layers: 8, KVDim: 192}
	tokens := 2048
	p := newPair(t, NewMemTransport(), ReceiverConfig{Layout: l}, SenderConfig{})
	sink := p.lg.sink(l)
	src := p.lg.source(l, 1)
	var maxAhead int64
	sink.onWrite = func() {
		src.mu.Lock()
		ahead := src.bytes - sink.bytes.Load()
		src.mu.Unlock()
		maxAhead = max(maxAhead, ahead) // WriteKV calls are serial
		time.Sleep(50 * time.Microsecond)
	}
	o := p.runWith(bg(t), Request{ID: 1, Nonce: 1, Tokens: tokens}, tokens, nil, sink, src)
	if o.send != nil || o.await != nil {
		t.Fatalf("send %v, await %v", o.send, o.await)
	}
	total := l.Bytes(tokens)
	bound := int64(flushBytes + 2*frameBytes + 256<<10)
	if maxAhead > bound || total < 3*bound {
		t.Fatalf("prefill ran %d bytes ahead of decode (bound %d) on a %d-byte transfer", maxAhead, bound, total)
	}
	t.Logf("prefill ran at most %d bytes ahead of decode on a %d-byte transfer", maxAhead, total)
}
