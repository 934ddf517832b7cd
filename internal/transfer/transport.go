package transfer

import (
	"context"
	"fmt"
	"net"
	"sync"
)

// Transport moves the frame stream. TCP is the default; an RDMA or
// shared-memory transport only has to offer ordered, reliable byte streams
// with deadlines, which is what net.Conn is.
type Transport interface {
	Listen(addr string) (net.Listener, error)
	Dial(ctx context.Context, addr string) (net.Conn, error)
}

// TCP returns the TCP transport.
func TCP() Transport { return tcpTransport{} }

type tcpTransport struct{}

var _ Transport = (*tcpTransport)(nil)

func (tcpTransport) Listen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

func (tcpTransport) Dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// MemTransport is an in-process transport over net.Pipe, for tests: addresses
// are names local to one MemTransport. net.Pipe has no buffer at all, so a
// slow reader stalls the writer immediately.
type MemTransport struct {
	mu        sync.Mutex
	listeners map[string]*memListener
}

var _ Transport = (*MemTransport)(nil)

// NewMemTransport returns an empty in-process transport.
func NewMemTransport() *MemTransport {
	return &MemTransport{listeners: map[string]*memListener{}}
}

// Listen registers addr; it fails if addr is taken.
func (t *MemTransport) Listen(addr string) (net.Listener, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.listeners[addr]; ok {
		return nil, fmt.Errorf("transfer: mem listen %q: address in use", addr)
	}
	l := &memListener{t: t, addr: memAddr(addr), conns: make(chan net.Conn), closed: make(chan struct{})}
	t.listeners[addr] = l
	return l, nil
}

// Dial connects to a listener of this transport.
func (t *MemTransport) Dial(ctx context.Context, addr string) (net.Conn, error) {
	t.mu.Lock()
	l := t.listeners[addr]
	t.mu.Unlock()
	if l == nil {
		return nil, fmt.Errorf("transfer: mem dial %q: connection refused", addr)
	}
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, fmt.Errorf("transfer: mem dial %q: listener closed", addr)
	case <-ctx.Done():
		return nil, fmt.Errorf("transfer: mem dial %q: %w", addr, ctx.Err())
	}
}

type memAddr string

func (a memAddr) Network() string { return "mem" }
func (a memAddr) String() string  { return string(a) }

type memListener struct {
	t     *MemTransport
	addr  memAddr
	conns chan net.Conn

	once   sync.Once
	closed chan struct{}
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error {
	l.once.Do(func() {
		close(l.closed)
		l.t.mu.Lock()
		delete(l.t.listeners, string(l.addr))
		l.t.mu.Unlock()
	})
	return nil
}

func (l *memListener) Addr() net.Addr { return l.addr }
