package transfer

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sync"
	"time"
)

// SenderConfig configures the prefill side. Zero durations take defaults.
type SenderConfig struct {
	Layout    Layout
	Transport Transport // nil means TCP
	Addr      string    // the decode worker's Receiver
	// DialTimeout and HandshakeTimeout bound connection setup (default 5s each).
	DialTimeout      time.Duration
	HandshakeTimeout time.Duration
	// StallTimeout bounds each write: a receiver that reads nothing for this
	// long fails the send with ErrDeadline (default 10s).
	StallTimeout time.Duration
	// AckTimeout bounds the wait for ACK/NACK after the completion record
	// (default 10s).
	AckTimeout time.Duration
	// MaxIdle is how many idle connections the Sender keeps (default 4).
	MaxIdle int
}

func (c *SenderConfig) defaults() {
	if c.Transport == nil {
		c.Transport = TCP()
	}
	for _, d := range []*time.Duration{&c.DialTimeout, &c.HandshakeTimeout, &c.StallTimeout, &c.AckTimeout} {
		if *d <= 0 {
			*d = 5 * time.Second
			if d == &c.StallTimeout || d == &c.AckTimeout {
				*d = 10 * time.Second
			}
		}
	}
	if c.MaxIdle <= 0 {
		c.MaxIdle = 4
	}
}

// Sender is the prefill side's handle on one decode worker. It keeps a few
// handshaken connections and runs each Send on a connection of its own.
type Sender struct {
	cfg SenderConfig

	mu     sync.Mutex
	closed bool
	idle   []*sconn
}

// sconn is one sender connection, past its handshake.
type sconn struct {
	nc   net.Conn
	fr   frameReader
	wbuf []byte
}

// Dial creates a Sender and opens its first connection, so a model or layout
// mismatch with the decode worker surfaces here as a *MismatchError.
func Dial(ctx context.Context, cfg SenderConfig) (*Sender, error) {
	cfg.defaults()
	if err := cfg.Layout.Validate(); err != nil {
		return nil, err
	}
	s := &Sender{cfg: cfg}
	c, err := s.dial(ctx)
	if err != nil {
		return nil, err
	}
	s.put(c)
	return s, nil
}

// Close closes idle connections; sends in flight finish on theirs.
func (s *Sender) Close() error {
	s.mu.Lock()
	s.closed = true
	idle := s.idle
	s.idle = nil
	s.mu.Unlock()
	for _, c := range idle {
		c.nc.Close()
	}
	return nil
}

func (s *Sender) dial(ctx context.Context) (*sconn, error) {
	dctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
	defer cancel()
	nc, err := s.cfg.Transport.Dial(dctx, s.cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("transfer: dial %s: %w: %w", s.cfg.Addr, ErrConnLost, err)
	}
	c := &sconn{nc: nc, fr: frameReader{r: bufio.NewReaderSize(nc, 4096), maxPayload: 4096}}
	if err := c.handshake(s.cfg.Layout, s.cfg.HandshakeTimeout); err != nil {
		nc.Close()
		return nil, fmt.Errorf("transfer: bootstrap with %s: %w", s.cfg.Addr, err)
	}
	return c, nil
}

func (c *sconn) handshake(l Layout, timeout time.Duration) error {
	c.nc.SetDeadline(time.Now().Add(timeout))
	defer c.nc.SetDeadline(time.Time{})
	if _, err := c.nc.Write(appendFrame(nil, frameHello, 0, appendHello(nil, l))); err != nil {
		return fmt.Errorf("%w: %w", ErrConnLost, err)
	}
	h, payload, _, err := c.fr.next()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConnLost, err)
	}
	if h.typ != frameHello {
		return fmt.Errorf("got %v, want HELLO: %w", h.typ, ErrProtocol)
	}
	if h.version != Version {
		return &MismatchError{"protocol version", fmt.Sprint(Version), fmt.Sprint(h.version)}
	}
	remote, err := parseHello(payload)
	if err != nil {
		return err
	}
	return l.compare(remote)
}

func (s *Sender) get(ctx context.Context) (*sconn, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("transfer: send: %w", ErrClosed)
	}
	if n := len(s.idle); n > 0 {
		c := s.idle[n-1]
		s.idle = s.idle[:n-1]
		s.mu.Unlock()
		return c, nil
	}
	s.mu.Unlock()
	return s.dial(ctx)
}

func (s *Sender) put(c *sconn) {
	if cap(c.wbuf) > 4<<20 {
		c.wbuf = nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.idle) >= s.cfg.MaxIdle {
		c.nc.Close()
		return
	}
	s.idle = append(s.idle, c)
}

// PageSource yields one request's KV on the prefill side.
type PageSource interface {
	// AppendKV appends slots key rows followed by slots value rows of
	// logical page page in layer layer to dst, as little-endian elements of
	// the layout's dtype, and returns the extended slice.
	AppendKV(dst []byte, layer, page, slots int) ([]byte, error)
}

// Request names one transfer: the id and nonce the decode side reserved
// under, and the admitted prompt length.
type Request struct {
	ID     uint64
	Nonce  uint64
	Tokens int
}

// Send streams req's KV from src to the decode worker and waits for its
// verdict. ready delivers how many layers (counted from 0) are computed for
// the whole prompt, nondecreasing; each new value streams those layers'
// pages while later layers are still computing. A nil ready means every
// layer is ready now. Closing ready before all layers are ready aborts the
// request with ErrIncomplete.
//
// Send returns nil only when decode acknowledged the completion record. The
// caller holds a lease on the prefill pages for the whole call and must
// release it when Send returns, on every path (ACK, NACK, error): Send never
// reads src after it returns, and nothing else will release the lease.
func (s *Sender) Send(ctx context.Context, req Request, src PageSource, ready <-chan int) error {
	if req.Tokens < 1 || req.Tokens > maxTokens {
		return fmt.Errorf("transfer: send request %d: %d tokens out of range [1, %d]", req.ID, req.Tokens, maxTokens)
	}
	c, err := s.get(ctx)
	if err != nil {
		return fmt.Errorf("transfer: send request %d: %w", req.ID, err)
	}
	st := &stream{cfg: &s.cfg, c: c, req: req, src: src, readerDone: make(chan struct{})}
	reusable, err := st.run(ctx, ready)
	if reusable {
		s.put(c)
	} else {
		c.nc.Close()
	}
	return err
}
