package transfer

import (
	"bufio"
	"fmt"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ReceiverConfig configures the decode side. Zero durations take defaults.
type ReceiverConfig struct {
	Layout    Layout
	Transport Transport // nil means TCP
	// TransferTimeout bounds a reservation from Expect to its verified
	// completion (default 60s). When prefill streams layers as it computes
	// them, this includes the prefill compute time.
	TransferTimeout time.Duration
	// StallTimeout bounds the silence between two frames of a request in
	// flight, and every control-frame write (default 10s). It must exceed
	// the longest compute gap between two ready layers on the prefill side.
	StallTimeout time.Duration
	// HandshakeTimeout bounds the bootstrap exchange (default 5s).
	HandshakeTimeout time.Duration
	// OnError, if set, hears connection-level failures (handshake
	// mismatches, protocol violations) that have no request to report to.
	OnError func(error)
}

func (c *ReceiverConfig) defaults() {
	if c.Transport == nil {
		c.Transport = TCP()
	}
	if c.TransferTimeout <= 0 {
		c.TransferTimeout = 60 * time.Second
	}
	if c.StallTimeout <= 0 {
		c.StallTimeout = 10 * time.Second
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = 5 * time.Second
	}
}

// Receiver is the decode side: it accepts connections from senders and
// routes each request's frames to the reservation Expect registered.
type Receiver struct {
	cfg      ReceiverConfig
	ln       net.Listener
	wg       sync.WaitGroup
	rejected atomic.Uint64

	mu      sync.Mutex
	closed  bool
	pending map[uint64]*Pending
	conns   map[*rconn]struct{}
}

// Listen starts a receiver on addr.
func Listen(addr string, cfg ReceiverConfig) (*Receiver, error) {
	cfg.defaults()
	if err := cfg.Layout.Validate(); err != nil {
		return nil, err
	}
	ln, err := cfg.Transport.Listen(addr)
	if err != nil {
		return nil, fmt.Errorf("transfer: listen %s: %w", addr, err)
	}
	r := &Receiver{cfg: cfg, ln: ln, pending: map[uint64]*Pending{}, conns: map[*rconn]struct{}{}}
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

// Addr is the address senders dial.
func (r *Receiver) Addr() string { return r.ln.Addr().String() }

// Rejected counts frames refused because they named no live reservation of
// their connection (unknown, finished, or foreign request ids, wrong nonce).
// Their payloads are never written anywhere.
func (r *Receiver) Rejected() uint64 { return r.rejected.Load() }

// maxTokens keeps a completion record within MaxPayload even at page size 1.
const maxTokens = (MaxPayload - doneFixed) / 4

// readBufBytes sizes the receiver's read buffer. It batches small frames
// but stays small, so a large payload is mostly read straight into the frame
// buffer instead of being copied through it.
const readBufBytes = 16 << 10

// maxBlocks bounds the per-request arrival bitmap (1<<30 bits, 128 MiB).
const maxBlocks = 1 << 30

// Expect registers a reservation for request id: promptTokens admitted
// tokens whose KV goes into sink. The reservation ends after
// TransferTimeout unless the transfer completes first.
func (r *Receiver) Expect(id, nonce uint64, promptTokens int, sink PageSink) (*Pending, error) {
	if promptTokens < 1 || promptTokens > maxTokens || promptTokens > math.MaxUint32 {
		return nil, fmt.Errorf("transfer: expect request %d: %d prompt tokens out of range [1, %d]", id, promptTokens, maxTokens)
	}
	l := r.cfg.Layout
	pages := l.Pages(promptTokens)
	if pages*l.Layers > maxBlocks {
		return nil, fmt.Errorf("transfer: expect request %d: %d pages × %d layers exceeds %d blocks", id, pages, l.Layers, maxBlocks)
	}
	p := &Pending{
		r: r, id: id, nonce: nonce, tokens: promptTokens, sink: sink, layout: l,
		done: make(chan struct{}),
		got:  make([]uint64, (pages*l.Layers+63)/64),
		sums: make([]uint32, pages),
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, fmt.Errorf("transfer: expect request %d: %w", id, ErrClosed)
	}
	if _, ok := r.pending[id]; ok {
		r.mu.Unlock()
		return nil, fmt.Errorf("transfer: expect request %d: %w", id, ErrDuplicate)
	}
	r.pending[id] = p
	r.mu.Unlock()
	// Lock order is p.mu then r.mu (finishLocked calls forget), so the timer
	// is armed after publishing; a Close in between already finished p.
	p.mu.Lock()
	if !p.finished {
		p.timer = time.AfterFunc(r.cfg.TransferTimeout, func() {
			p.abort(fmt.Errorf("transfer: request %d not complete within %v: %w", id, r.cfg.TransferTimeout, ErrDeadline))
		})
	}
	p.mu.Unlock()
	return p, nil
}

// forget removes a finished reservation, so later frames for its id are
// rejected as unknown.
func (r *Receiver) forget(p *Pending) {
	r.mu.Lock()
	if r.pending[p.id] == p {
		delete(r.pending, p.id)
	}
	r.mu.Unlock()
}

func (r *Receiver) lookup(id uint64) *Pending {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pending[id]
}

// Close stops accepting, aborts every reservation with ErrClosed (dropping
// its sink), closes every connection and waits for their goroutines.
func (r *Receiver) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	ps := make([]*Pending, 0, len(r.pending))
	for _, p := range r.pending {
		ps = append(ps, p)
	}
	cs := make([]*rconn, 0, len(r.conns))
	for c := range r.conns {
		cs = append(cs, c)
	}
	r.mu.Unlock()
	err := r.ln.Close()
	for _, p := range ps {
		p.abort(fmt.Errorf("transfer: request %d: receiver closing: %w", p.id, ErrClosed))
	}
	for _, c := range cs {
		c.close()
	}
	r.wg.Wait()
	return err
}

func (r *Receiver) report(err error) {
	if r.cfg.OnError != nil {
		r.cfg.OnError(err)
	}
}

func (r *Receiver) accept() {
	defer r.wg.Done()
	for {
		nc, err := r.ln.Accept()
		if err != nil {
			return
		}
		c := &rconn{r: r, nc: nc}
		c.fr = frameReader{r: bufio.NewReaderSize(nc, readBufBytes), maxPayload: MaxPayload}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			nc.Close()
			return
		}
		r.conns[c] = struct{}{}
		r.wg.Add(1)
		r.mu.Unlock()
		go c.serve()
	}
}
