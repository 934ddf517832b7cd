package transfer

import (
	"context"
	"fmt"
	"hash/crc32"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// FaultTransport wraps a Transport and lets a test decide the fate of every
// frame written on its connections: pass, drop, corrupt, delay, or cut the
// connection. It parses the frame stream on the write side, so faults land on
// frame boundaries whatever the writer's batching.
type FaultTransport struct {
	Inner Transport
	// Fault decides each frame's fate; nil passes everything.
	Fault func(FrameInfo) Fault

	conns atomic.Int64
}

var _ Transport = (*FaultTransport)(nil)

// FrameInfo describes a frame about to be written.
type FrameInfo struct {
	FromDialer bool   // written by the dialing side (the sender)
	Conn       int    // connection number within the transport, from 0
	Index      int    // frame number on this connection and direction, from 0
	Type       string // "HELLO", "BEGIN", "PAGE", "DONE", "ACK", "NACK", "ABORT"
	Request    uint64
	Page       int
	Layer      int // first layer of a PAGE frame
	Layers     int // layer count of a PAGE frame
}

// FaultAction is what happens to a frame.
type FaultAction int

const (
	FaultPass            FaultAction = iota
	FaultDrop                        // the frame silently disappears
	FaultCorrupt                     // one payload bit flips; the frame checksum no longer matches
	FaultCorruptResealed             // one payload bit flips and the frame checksum is recomputed
	FaultDelay                       // the frame is written after Fault.Delay
	FaultCut                         // the connection closes before the frame
)

// Fault is a decision for one frame.
type Fault struct {
	Action FaultAction
	Delay  time.Duration
}

// Listen wraps accepted connections (frames written by the receiver).
func (t *FaultTransport) Listen(addr string) (net.Listener, error) {
	ln, err := t.Inner.Listen(addr)
	if err != nil {
		return nil, err
	}
	return &faultListener{Listener: ln, t: t}, nil
}

// Dial wraps dialed connections (frames written by the sender).
func (t *FaultTransport) Dial(ctx context.Context, addr string) (net.Conn, error) {
	nc, err := t.Inner.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	return t.wrap(nc, true), nil
}

func (t *FaultTransport) wrap(nc net.Conn, fromDialer bool) net.Conn {
	return &faultConn{Conn: nc, t: t, id: int(t.conns.Add(1) - 1), fromDialer: fromDialer, closed: make(chan struct{})}
}

type faultListener struct {
	net.Listener
	t *FaultTransport
}

func (l *faultListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.t.wrap(nc, false), nil
}

type faultConn struct {
	net.Conn
	t          *FaultTransport
	id         int
	fromDialer bool

	mu      sync.Mutex
	pending []byte
	index   int

	once   sync.Once
	closed chan struct{}
}

func (c *faultConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// Write buffers p and emits every complete frame in it, applying faults.
func (c *faultConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending = append(c.pending, p...)
	for len(c.pending) >= headerSize {
		length := int(le.Uint32(c.pending[20:]))
		if length > MaxPayload { // not a frame stream: pass it through
			_, err := c.Conn.Write(c.pending)
			c.pending = c.pending[:0]
			if err != nil {
				return 0, err
			}
			break
		}
		total := headerSize + length
		if len(c.pending) < total {
			break
		}
		if err := c.emit(c.pending[:total]); err != nil {
			return 0, err
		}
		c.pending = c.pending[:copy(c.pending, c.pending[total:])]
	}
	return len(p), nil
}

func (c *faultConn) emit(f []byte) error {
	info := FrameInfo{
		FromDialer: c.fromDialer, Conn: c.id, Index: c.index,
		Type: frameType(f[3]).String(), Request: le.Uint64(f[4:]),
		Page: int(le.Uint32(f[12:])), Layer: int(le.Uint16(f[16:])), Layers: int(le.Uint16(f[18:])),
	}
	c.index++
	var fault Fault
	if c.t.Fault != nil {
		fault = c.t.Fault(info)
	}
	switch fault.Action {
	case FaultDrop:
		return nil
	case FaultCorrupt, FaultCorruptResealed:
		payload := f[headerSize:]
		if len(payload) == 0 {
			f[8] ^= 1 // no payload: corrupt the request id instead
		} else {
			payload[len(payload)/2] ^= 0x10
		}
		if fault.Action == FaultCorruptResealed {
			psum := crc32.Checksum(payload, castagnoli)
			le.PutUint32(f[24:], crc32.Update(psum, castagnoli, f[:24]))
		}
	case FaultDelay:
		select {
		case <-time.After(fault.Delay):
		case <-c.closed:
			return net.ErrClosed
		}
	case FaultCut:
		c.Close()
		return fmt.Errorf("transfer: fault injection cut connection %d before frame %d: %w", c.id, info.Index, net.ErrClosed)
	}
	_, err := c.Conn.Write(f)
	return err
}
