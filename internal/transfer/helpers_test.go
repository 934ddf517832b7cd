package transfer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// testLayout is small but has a partial last page for 10 tokens.
var testLayout = Layout{ModelDigest: [32]byte{1, 2, 3}, PageSize: 4, DType: gguf.F16, Layers: 3, KVDim: 8}

// short reports the lighter -race pass.
func short() bool { return testing.Short() || os.Getenv("BULKHEAD_SHORT") == "1" }

// pattern is the byte a fake source holds at offset i of block (layer, page).
func pattern(seed uint64, layer, page, i int) byte {
	return byte(seed*131 + uint64(layer)*7 + uint64(page)*13 + uint64(i)*3)
}

// fakeSource serves patterned KV and checks the lease discipline: no read
// may happen while the prefill pages are not leased.
type fakeSource struct {
	l     Layout
	seed  uint64
	mu    sync.Mutex
	lease int
	reads int
	bad   int   // reads without a lease
	bytes int64 // bytes handed out
	fail  error // returned by AppendKV when set
}

func (s *fakeSource) acquire() { s.mu.Lock(); s.lease++; s.mu.Unlock() }
func (s *fakeSource) release() { s.mu.Lock(); s.lease--; s.mu.Unlock() }

func (s *fakeSource) AppendKV(dst []byte, layer, page, slots int) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.lease <= 0 {
		s.bad++
	}
	if s.fail != nil {
		return dst, s.fail
	}
	n := s.l.blockBytes(slots)
	for i := range n {
		dst = append(dst, pattern(s.seed, layer, page, i))
	}
	s.bytes += int64(n)
	return dst, nil
}

// fakeSink records blocks and how the reservation ended.
type fakeSink struct {
	l       Layout
	mu      sync.Mutex
	blocks  map[[2]int][]byte
	writes  int
	late    int // writes after the reservation ended
	dropped int
	freed   int           // released by the test after a successful transfer
	delay   time.Duration // per write, to model a slow decode worker
	bytes   atomic.Int64
	onWrite func() // called before each write is recorded
}

func newFakeSink(l Layout) *fakeSink { return &fakeSink{l: l, blocks: map[[2]int][]byte{}} }

func (s *fakeSink) WriteKV(layer, page, slots int, kv []byte) error {
	if s.onWrite != nil {
		s.onWrite()
	}
	if s.delay > 0 {
		time.Sleep(s.delay)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	if s.dropped > 0 || s.freed > 0 {
		s.late++
	}
	if len(kv) != s.l.blockBytes(slots) {
		return fmt.Errorf("fake sink: %d bytes for %d slots", len(kv), slots)
	}
	s.blocks[[2]int{layer, page}] = append([]byte(nil), kv...)
	s.bytes.Add(int64(len(kv)))
	return nil
}

func (s *fakeSink) Drop() { s.mu.Lock(); s.dropped++; s.mu.Unlock() }

func (s *fakeSink) free() { s.mu.Lock(); s.freed++; s.mu.Unlock() }

func (s *fakeSink) count() int { s.mu.Lock(); defer s.mu.Unlock(); return s.writes }

// verify checks the sink holds exactly the source's blocks for tokens.
func (s *fakeSink) verify(t *testing.T, seed uint64, tokens int) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	pages := s.l.Pages(tokens)
	if len(s.blocks) != pages*s.l.Layers {
		t.Fatalf("sink holds %d blocks, want %d", len(s.blocks), pages*s.l.Layers)
	}
	for key, b := range s.blocks {
		want := s.l.blockBytes(s.l.slots(tokens, key[1]))
		if len(b) != want {
			t.Fatalf("block %v: %d bytes, want %d", key, len(b), want)
		}
		for i, x := range b {
			if x != pattern(seed, key[0], key[1], i) {
				t.Fatalf("block %v byte %d = %d, want %d", key, i, x, pattern(seed, key[0], key[1], i))
			}
		}
	}
}

// ledger is the I7-style accounting of one test: every reservation ends
// exactly once (dropped by the receiver, or freed by the test after
// success), nothing is written after that, every lease is released and no
// source is read without one.
type ledger struct {
	mu      sync.Mutex
	sinks   []*fakeSink
	sources []*fakeSource
}

func newLedger(t *testing.T) *ledger {
	lg := &ledger{}
	t.Cleanup(func() { lg.check(t) })
	return lg
}

func (lg *ledger) sink(l Layout) *fakeSink {
	s := newFakeSink(l)
	lg.mu.Lock()
	lg.sinks = append(lg.sinks, s)
	lg.mu.Unlock()
	return s
}

func (lg *ledger) source(l Layout, seed uint64) *fakeSource {
	s := &fakeSource{l: l, seed: seed}
	lg.mu.Lock()
	lg.sources = append(lg.sources, s)
	lg.mu.Unlock()
	return s
}

func (lg *ledger) check(t *testing.T) {
	t.Helper()
	for i, s := range lg.sinks {
		s.mu.Lock()
		if s.dropped+s.freed != 1 || s.late != 0 {
			t.Errorf("sink %d: dropped %d times, freed %d times, %d writes after release", i, s.dropped, s.freed, s.late)
		}
		s.mu.Unlock()
	}
	for i, s := range lg.sources {
		s.mu.Lock()
		if s.lease != 0 || s.bad != 0 {
			t.Errorf("source %d: %d leases outstanding, %d reads without a lease", i, s.lease, s.bad)
		}
		s.mu.Unlock()
	}
}

// pair is a receiver and a sender joined by one transport.
type pair struct {
	recv *Receiver
	send *Sender
	lg   *ledger
	l    Layout
}

func newPair(t *testing.T, tr Transport, rc ReceiverConfig, sc SenderConfig) *pair {
	t.Helper()
	if rc.Layout.PageSize == 0 {
		rc.Layout = testLayout
	}
	if sc.Layout.PageSize == 0 {
		sc.Layout = rc.Layout
	}
	rc.Transport, sc.Transport = tr, tr
	addr := "decode"
	if isTCP(tr) {
		addr = "127.0.0.1:0"
	}
	r, err := Listen(addr, rc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	sc.Addr = r.Addr()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := Dial(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &pair{recv: r, send: s, lg: newLedger(t), l: rc.Layout}
}

// outcome is what both sides said about one request.
type outcome struct {
	send, await error
	sink        *fakeSink
	src         *fakeSource
}

// run performs a whole transfer the way the workers will: decode reserves,
// prefill leases, sends and releases on every path, decode awaits.
func (p *pair) run(ctx context.Context, req Request, reserved int, ready <-chan int) outcome {
	return p.runWith(ctx, req, reserved, ready, p.lg.sink(p.l), p.lg.source(p.l, req.ID))
}

// runWith is run with a sink and source the test made (through the ledger).
func (p *pair) runWith(ctx context.Context, req Request, reserved int, ready <-chan int, sink *fakeSink, src *fakeSource) outcome {
	o := outcome{sink: sink, src: src}
	pend, err := p.recv.Expect(req.ID, req.Nonce, reserved, sink)
	if err != nil {
		sink.free() // the receiver never took the reservation
		o.await = err
		return o
	}
	o.src.acquire()
	o.send = p.send.Send(ctx, req, o.src, ready)
	o.src.release()
	actx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o.await = pend.Await(actx)
	if o.await == nil {
		sink.free()
	}
	return o
}

func wantErr(t *testing.T, side string, err error, targets ...error) {
	t.Helper()
	for _, target := range targets {
		if !errors.Is(err, target) {
			t.Errorf("%s: got %v, want an error matching %v", side, err, target)
		}
	}
}

func isTCP(tr Transport) bool {
	if ft, ok := tr.(*FaultTransport); ok {
		tr = ft.Inner
	}
	_, ok := tr.(tcpTransport)
	return ok
}
