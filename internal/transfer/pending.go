package transfer

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"math/bits"
	"sync"
	"time"
)

// PageSink accepts one request's transferred KV into the pages the decode
// worker reserved for it.
type PageSink interface {
	// WriteKV stores slots key rows followed by slots value rows
	// (little-endian elements of the layout's dtype) into logical page page
	// of layer layer. kv is valid only during the call.
	WriteKV(layer, page, slots int, kv []byte) error
	// Drop tells the sink the transfer failed, timed out or was canceled.
	// The receiver calls it exactly once, then, and never calls WriteKV
	// after it; on success it is not called. Drop does not release the
	// reservation: the same error reaches Pending.Await, and the reservation's
	// owner releases the pages there (decode's worker passes it to
	// engine.Reservation.Done), so release happens in one place.
	Drop()
}

// errFinished tells the connection loop that the request already ended
// elsewhere (canceled, timed out): whoever ended it closes the connection.
var errFinished = errors.New("transfer: request already finished")

// Pending is a decode-side reservation: the pages of one admitted prompt,
// waiting for its KV. Exactly one of two things happens to it: every block
// arrives and the completion record verifies (Await returns nil), or it ends
// with an error and its sink is dropped.
type Pending struct {
	r      *Receiver
	id     uint64
	nonce  uint64
	tokens int
	sink   PageSink
	layout Layout
	done   chan struct{}

	mu       sync.Mutex
	finished bool
	err      error
	conn     *rconn   // the connection streaming this request, once BEGIN arrived
	got      []uint64 // bitset: block (page, layer) at bit page*Layers+layer
	sums     []uint32 // running checksum per page
	timer    *time.Timer
}

// Await blocks until the transfer is verified complete (nil) or has failed.
// If ctx ends first the reservation is aborted with ErrDeadline or
// ErrCanceled, the prefill side is told, and the sink is dropped.
func (p *Pending) Await(ctx context.Context) error {
	select {
	case <-p.done:
	case <-ctx.Done():
		reason := ErrCanceled
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			reason = ErrDeadline
		}
		p.abort(fmt.Errorf("transfer: request %d: decode gave up waiting: %w", p.id, reason))
		<-p.done
	}
	return p.err
}

// Cancel aborts the reservation from the decode side: the sink is dropped and
// a streaming sender gets an ABORT frame. It does nothing once the transfer
// has ended.
func (p *Pending) Cancel() {
	p.abort(fmt.Errorf("transfer: request %d canceled by decode: %w", p.id, ErrCanceled))
}

// abort ends the request from outside its connection loop and tells the
// sender, whose connection is then closed.
func (p *Pending) abort(err error) {
	p.mu.Lock()
	first, c := p.finishLocked(err)
	p.mu.Unlock()
	if first && c != nil {
		c.refuse(frameAbort, p.id, err)
		c.close()
	}
}

// fail ends the request from its connection loop.
func (p *Pending) fail(err error) {
	p.mu.Lock()
	p.finishLocked(err)
	p.mu.Unlock()
}

// finishLocked moves the request to its terminal state once, telling the
// sink on failure (Await's caller releases the reservation). It returns whether this call ended it and the
// connection that was streaming it.
func (p *Pending) finishLocked(err error) (bool, *rconn) {
	if p.finished {
		return false, nil
	}
	p.finished, p.err = true, err
	if p.timer != nil {
		p.timer.Stop()
	}
	if err != nil {
		p.sink.Drop()
	}
	p.r.forget(p)
	c := p.conn
	p.conn = nil
	close(p.done)
	return true, c
}

// bind attaches the request to the connection that sent its BEGIN.
func (p *Pending) bind(b begin, c *rconn) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.finished:
		return fmt.Errorf("transfer: BEGIN for finished request %d: %w", p.id, ErrUnknownRequest)
	case p.nonce != b.nonce:
		// A stale or foreign sender: refuse it without touching the reservation.
		return fmt.Errorf("transfer: BEGIN for request %d with nonce %d, reservation has %d: %w", p.id, b.nonce, p.nonce, ErrUnknownRequest)
	case p.conn != nil:
		return fmt.Errorf("transfer: second BEGIN for request %d: %w", p.id, ErrDuplicate)
	case b.tokens != p.tokens:
		err := fmt.Errorf("transfer: request %d: prefill sends %d tokens, decode reserved %d: %w", p.id, b.tokens, p.tokens, ErrTokenCount)
		p.finishLocked(err)
		return err
	}
	p.conn = c
	return nil
}

// writePage checks a PAGE frame against the reservation and stores it.
func (p *Pending) writePage(h header, payload []byte, psum uint32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return errFinished
	}
	l := p.layout
	page, first, n := int(h.page), int(h.layer), int(h.layers)
	if page >= len(p.sums) {
		return fmt.Errorf("transfer: request %d: page %d beyond its %d pages: %w", p.id, page, len(p.sums), ErrProtocol)
	}
	if first+n > l.Layers {
		return fmt.Errorf("transfer: request %d page %d: layers [%d, %d) beyond %d layers: %w", p.id, page, first, first+n, l.Layers, ErrProtocol)
	}
	slots := l.slots(p.tokens, page)
	block := l.blockBytes(slots)
	if len(payload) != n*block {
		return fmt.Errorf("transfer: request %d page %d: payload %d bytes, want %d layers × %d: %w", p.id, page, len(payload), n, block, ErrProtocol)
	}
	for i := range n {
		if bit := page*l.Layers + first + i; p.got[bit/64]&(1<<(bit%64)) != 0 {
			return fmt.Errorf("transfer: request %d page %d layer %d sent twice: %w", p.id, page, first+i, ErrProtocol)
		}
	}
	for i := range n {
		if err := p.sink.WriteKV(first+i, page, slots, payload[i*block:(i+1)*block]); err != nil {
			return fmt.Errorf("transfer: request %d page %d layer %d: sink: %w", p.id, page, first+i, err)
		}
		bit := page*l.Layers + first + i
		p.got[bit/64] |= 1 << (bit % 64)
	}
	p.sums[page] = chainSum(p.sums[page], psum)
	return nil
}

// chainSum folds one PAGE frame's payload CRC into its page's checksum.
func chainSum(sum, psum uint32) uint32 {
	var b [4]byte
	le.PutUint32(b[:], psum)
	return crc32.Update(sum, castagnoli, b[:])
}

// complete verifies the completion record (DESIGN I5) and ends the request.
func (p *Pending) complete(m done) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return errFinished
	}
	err := p.verify(m)
	p.finishLocked(err)
	return err
}

func (p *Pending) verify(m done) error {
	if m.nonce != p.nonce {
		return fmt.Errorf("transfer: request %d: completion nonce %d, reservation %d: %w", p.id, m.nonce, p.nonce, ErrProtocol)
	}
	m.layout.MaxContext = p.layout.MaxContext // DONE carries no context: HELLO checked it
	if err := p.layout.compare(m.layout); err != nil {
		return fmt.Errorf("transfer: request %d completion record: %w", p.id, err)
	}
	if m.tokens != p.tokens {
		return fmt.Errorf("transfer: request %d: completion record has %d tokens, decode reserved %d: %w", p.id, m.tokens, p.tokens, ErrTokenCount)
	}
	if len(m.sums) != len(p.sums) {
		return fmt.Errorf("transfer: request %d: completion record lists %d pages, reservation has %d: %w", p.id, len(m.sums), len(p.sums), ErrIncomplete)
	}
	want := len(p.sums) * p.layout.Layers
	have := 0
	for _, w := range p.got {
		have += bits.OnesCount64(w)
	}
	if have != want {
		for bit := range want {
			if p.got[bit/64]&(1<<(bit%64)) == 0 {
				return fmt.Errorf("transfer: request %d: page %d layer %d never arrived (%d of %d blocks missing): %w",
					p.id, bit/p.layout.Layers, bit%p.layout.Layers, want-have, want, ErrIncomplete)
			}
		}
	}
	for i, s := range m.sums {
		if s != p.sums[i] {
			return fmt.Errorf("transfer: request %d page %d: checksum %08x, prefill sent %08x: %w", p.id, i, p.sums[i], s, ErrChecksum)
		}
	}
	return nil
}
