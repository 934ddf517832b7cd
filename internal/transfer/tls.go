package transfer

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"

	"github.com/bulkhead-llm/bulkhead/internal/certs"
)

// TLSTransport runs the frame stream inside mutual TLS 1.3 (DESIGN I9).
// Its listener accepts only peers the cluster CA vouches for as prefill
// workers; its dialer accepts only the server identity Accept approves —
// for a prefill worker, exactly the decode worker its reservation names, so
// an address chosen by whoever wrote the request cannot receive KV.
type TLSTransport struct {
	Inner  Transport // nil means TCP
	Creds  *certs.Credentials
	Accept func(certs.Identity) error // the server a Dial may reach; nil: any decode worker
}

var _ Transport = (*TLSTransport)(nil)

func (t *TLSTransport) inner() Transport {
	if t.Inner == nil {
		return TCP()
	}
	return t.Inner
}

// Listen accepts TLS connections from prefill workers only.
func (t *TLSTransport) Listen(addr string) (net.Listener, error) {
	ln, err := t.inner().Listen(addr)
	if err != nil {
		return nil, err
	}
	return &tlsListener{Listener: ln, cfg: t.Creds.ServerConfig(certs.RolePrefill)}, nil
}

// Dial connects and completes the handshake before returning, so a peer
// that cannot prove the expected identity never sees a frame.
func (t *TLSTransport) Dial(ctx context.Context, addr string) (net.Conn, error) {
	accept := t.Accept
	if accept == nil {
		accept = certs.Role(certs.RoleDecode)
	}
	raw, err := t.inner().Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	c := tls.Client(raw, t.Creds.ClientConfig(accept))
	if err := c.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, fmt.Errorf("transfer: TLS to %s: %w", addr, err)
	}
	return c, nil
}

// tlsListener hands out server-side TLS connections; each completes its
// handshake on first read, in the receiver's per-connection goroutine, so
// a slow or hostile client does not block Accept.
type tlsListener struct {
	net.Listener
	cfg *tls.Config
}

func (l *tlsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return tls.Server(c, l.cfg), nil
}
