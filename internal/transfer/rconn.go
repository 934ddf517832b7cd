package transfer

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// rconn is one accepted connection. It carries one request at a time; see
// the package comment for why.
type rconn struct {
	r  *Receiver
	nc net.Conn
	fr frameReader

	wmu  sync.Mutex
	wbuf []byte
}

func (c *rconn) close() { c.nc.Close() }

// send writes one control frame within timeout.
func (c *rconn) send(typ frameType, req uint64, payload []byte, timeout time.Duration) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf = appendFrame(c.wbuf[:0], typ, req, payload)
	c.nc.SetWriteDeadline(time.Now().Add(timeout))
	_, err := c.nc.Write(c.wbuf)
	return err
}

// refuse sends a NACK or ABORT carrying err. It is best effort, with a short
// deadline, because the connection is closed right after: a peer that does
// not read it learns from the close.
func (c *rconn) refuse(typ frameType, req uint64, err error) {
	c.send(typ, req, appendRefusal(nil, err), min(c.r.cfg.StallTimeout, time.Second))
}

func (c *rconn) serve() {
	defer func() {
		c.close()
		c.r.mu.Lock()
		delete(c.r.conns, c)
		c.r.mu.Unlock()
		c.r.wg.Done()
	}()
	if err := c.handshake(); err != nil {
		c.r.report(err)
		return
	}
	for {
		c.nc.SetReadDeadline(time.Time{}) // idle between requests
		h, payload, _, err := c.fr.next()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				c.r.report(fmt.Errorf("transfer: idle connection from %s: %w", c.nc.RemoteAddr(), err))
			}
			return
		}
		if h.typ != frameBegin {
			c.r.rejected.Add(1)
			err := fmt.Errorf("transfer: %v frame for request %d, which has not begun here: %w", h.typ, h.req, ErrUnknownRequest)
			c.refuse(frameNack, h.req, err)
			c.r.report(err)
			return
		}
		if !c.begin(h, payload) {
			return
		}
	}
}

// handshake exchanges HELLO frames. The receiver always answers with its own
// layout, so the sender can name the differing value too, then refuses a
// mismatch by closing.
func (c *rconn) handshake() error {
	c.nc.SetDeadline(time.Now().Add(c.r.cfg.HandshakeTimeout))
	defer c.nc.SetDeadline(time.Time{})
	h, payload, _, err := c.fr.next()
	if err != nil {
		return fmt.Errorf("transfer: handshake from %s: %w", c.nc.RemoteAddr(), err)
	}
	if h.typ != frameHello {
		return fmt.Errorf("transfer: handshake from %s: got %v, want HELLO: %w", c.nc.RemoteAddr(), h.typ, ErrProtocol)
	}
	remote, err := parseHello(payload)
	if err != nil {
		return err
	}
	if err := c.send(frameHello, 0, appendHello(nil, c.r.cfg.Layout), c.r.cfg.HandshakeTimeout); err != nil {
		return fmt.Errorf("transfer: handshake reply to %s: %w", c.nc.RemoteAddr(), err)
	}
	if h.version != Version {
		return &MismatchError{"protocol version", fmt.Sprint(Version), fmt.Sprint(h.version)}
	}
	if err := c.r.cfg.Layout.compare(remote); err != nil {
		return fmt.Errorf("transfer: handshake from %s refused: %w", c.nc.RemoteAddr(), err)
	}
	return nil
}

// begin binds a BEGIN to its reservation and streams the request. It reports
// whether the connection may carry another request.
func (c *rconn) begin(h header, payload []byte) bool {
	b, err := parseBegin(payload)
	var p *Pending
	if err == nil {
		if p = c.r.lookup(h.req); p == nil {
			err = fmt.Errorf("transfer: BEGIN for request %d, which decode does not expect: %w", h.req, ErrUnknownRequest)
		} else {
			err = p.bind(b, c)
		}
	}
	if err != nil {
		if !errors.Is(err, ErrTokenCount) {
			c.r.rejected.Add(1)
		}
		c.refuse(frameNack, h.req, err)
		return false
	}
	return c.stream(p)
}

// stream reads one bound request's frames until it ends.
func (c *rconn) stream(p *Pending) bool {
	for {
		c.nc.SetReadDeadline(time.Now().Add(c.r.cfg.StallTimeout))
		h, payload, psum, err := c.fr.next()
		if err != nil {
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded):
				err = fmt.Errorf("transfer: request %d: no frame for %v: %w", p.id, c.r.cfg.StallTimeout, ErrDeadline)
			case !errors.Is(err, ErrChecksum) && !errors.Is(err, ErrProtocol):
				err = fmt.Errorf("transfer: request %d: %w: %w", p.id, ErrConnLost, err)
			}
			p.fail(err)
			c.refuse(frameNack, p.id, err)
			return false
		}
		if h.req != p.id {
			c.r.rejected.Add(1)
			err := fmt.Errorf("transfer: %v frame for request %d on a connection streaming request %d: %w", h.typ, h.req, p.id, ErrProtocol)
			p.fail(err)
			c.refuse(frameNack, p.id, err)
			return false
		}
		switch h.typ {
		case framePage:
			err = p.writePage(h, payload, psum)
		case frameDone:
			var m done
			if m, err = parseDone(payload); err == nil {
				if err = p.complete(m); err == nil {
					return c.send(frameAck, p.id, nil, c.r.cfg.StallTimeout) == nil
				}
			}
		case frameAbort:
			rf, perr := parseRefusal(payload)
			if perr != nil {
				err = perr
				break
			}
			p.fail(rf.err(fmt.Sprintf("transfer: request %d aborted by prefill", p.id), ErrAborted))
			return false
		default:
			err = fmt.Errorf("transfer: unexpected %v frame in request %d: %w", h.typ, p.id, ErrProtocol)
		}
		if errors.Is(err, errFinished) {
			return false // ended by Cancel or a timeout, which closes the connection
		}
		if err != nil {
			p.fail(err)
			c.refuse(frameNack, p.id, err)
			return false
		}
	}
}
