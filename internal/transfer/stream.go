package transfer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// Sender-side batching: frames are appended to one buffer and written when
// it passes flushBytes; one PAGE frame carries as many layers of a page as
// fit in frameBytes.
const (
	flushBytes = 256 << 10
	frameBytes = 1 << 20
)

// stream is one Send in progress on its own connection.
type stream struct {
	cfg  *SenderConfig
	c    *sconn
	req  Request
	src  PageSource
	sums []uint32
	buf  []byte

	begun       bool // BEGIN reached the connection
	dirty       bool // a write stopped part-way through a frame
	writeFailed bool // the connection refused a write

	imu    sync.Mutex
	sealed bool // the final ABORT is being written: interrupts no longer apply

	readerDone chan struct{} // closed once the peer's verdict (or a read error) is in result
	result     error
}

// run streams the request and collects the verdict. The connection may be
// reused only after a clean ACK.
func (t *stream) run(ctx context.Context, ready <-chan int) (reusable bool, err error) {
	go t.readVerdict()
	stop := context.AfterFunc(ctx, t.interrupt)
	err = t.write(ctx, ready)
	gotVerdict := false
	if err == nil {
		timer := time.NewTimer(t.cfg.AckTimeout)
		select {
		case <-t.readerDone:
			err, gotVerdict = t.result, true
		case <-ctx.Done():
			err = t.ctxErr(ctx)
		case <-timer.C:
			err = fmt.Errorf("transfer: request %d: no ACK within %v: %w", t.req.ID, t.cfg.AckTimeout, ErrDeadline)
		}
		timer.Stop()
	} else if ctx.Err() == nil {
		if t.writeFailed {
			// A write usually fails because decode ended the request and
			// closed the connection; its NACK or ABORT is then on the way and
			// gives the real reason. The peer closed, so the wait is short.
			timer := time.NewTimer(min(t.cfg.StallTimeout, time.Second))
			select {
			case <-t.readerDone:
			case <-timer.C:
			}
			timer.Stop()
		}
		select {
		case <-t.readerDone:
			if t.result != nil && !errors.Is(t.result, ErrConnLost) {
				err, gotVerdict = t.result, true
			}
		default:
		}
	}
	if err != nil && !gotVerdict && t.begun && !t.dirty {
		// Tell decode at a frame boundary why we stop; best effort. Sealing
		// first keeps a late interrupt from failing this write.
		t.imu.Lock()
		t.sealed = true
		t.imu.Unlock()
		t.c.nc.SetWriteDeadline(time.Now().Add(min(t.cfg.StallTimeout, time.Second)))
		t.c.nc.Write(appendFrame(nil, frameAbort, t.req.ID, appendRefusal(nil, err)))
	}
	stopped := stop()
	if err != nil || !stopped {
		t.c.nc.Close()
	}
	<-t.readerDone
	t.c.wbuf = t.buf[:0]
	return err == nil && stopped, err
}

// interrupt unblocks a pending write when ctx ends or decode answered early.
func (t *stream) interrupt() {
	t.imu.Lock()
	defer t.imu.Unlock()
	if !t.sealed {
		t.c.nc.SetWriteDeadline(time.Unix(1, 0))
	}
}

func (t *stream) ctxErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("transfer: request %d: %w: %w", t.req.ID, ErrDeadline, ctx.Err())
	}
	return fmt.Errorf("transfer: request %d canceled by prefill: %w: %w", t.req.ID, ErrCanceled, ctx.Err())
}

// readVerdict reads decode's single answer: ACK, NACK or ABORT.
func (t *stream) readVerdict() {
	h, payload, _, err := t.c.fr.next()
	switch {
	case err != nil:
		err = fmt.Errorf("transfer: request %d: %w: %w", t.req.ID, ErrConnLost, err)
	case h.req != t.req.ID:
		err = fmt.Errorf("transfer: %v for request %d while sending %d: %w", h.typ, h.req, t.req.ID, ErrProtocol)
	case h.typ == frameAck:
	case h.typ == frameNack || h.typ == frameAbort:
		rf, perr := parseRefusal(payload)
		switch {
		case perr != nil:
			err = perr
		case h.typ == frameNack:
			err = rf.err(fmt.Sprintf("transfer: request %d refused by decode", t.req.ID), nil)
		default:
			err = rf.err(fmt.Sprintf("transfer: request %d aborted by decode", t.req.ID), ErrAborted)
		}
	default:
		err = fmt.Errorf("transfer: unexpected %v from decode: %w", h.typ, ErrProtocol)
	}
	// Publish before interrupting: flush checks readerDone after setting its
	// deadline, so either it sees the verdict or the interrupt lands after.
	t.result = err
	close(t.readerDone)
	if err != nil {
		t.interrupt()
	}
}

// write sends BEGIN, the pages of each layer as it becomes ready, and the
// completion record.
func (t *stream) write(ctx context.Context, ready <-chan int) error {
	l, id := t.cfg.Layout, t.req.ID
	pages := l.Pages(t.req.Tokens)
	t.sums = make([]uint32, pages)
	t.buf = appendFrame(t.c.wbuf[:0], frameBegin, id, appendBegin(nil, begin{nonce: t.req.Nonce, tokens: t.req.Tokens}))
	if err := t.flush(ctx); err != nil {
		return err
	}
	for sent := 0; sent < l.Layers; {
		n := l.Layers
		if ready != nil {
			select {
			case v, ok := <-ready:
				if !ok {
					return fmt.Errorf("transfer: request %d: layer source closed after %d of %d layers: %w", id, sent, l.Layers, ErrIncomplete)
				}
				n = min(max(v, sent), l.Layers)
			case <-ctx.Done():
				return t.ctxErr(ctx)
			case <-t.readerDone:
				return t.verdictEarly()
			}
		}
		if err := t.writeLayers(ctx, sent, n, pages); err != nil {
			return err
		}
		sent = n
	}
	t.buf = appendFrame(t.buf, frameDone, id, appendDone(nil, done{nonce: t.req.Nonce, tokens: t.req.Tokens, layout: l, sums: t.sums}))
	return t.flush(ctx)
}

// writeLayers streams layers [from, to) of every page.
func (t *stream) writeLayers(ctx context.Context, from, to, pages int) error {
	l := t.cfg.Layout
	for page := range pages {
		slots := l.slots(t.req.Tokens, page)
		block := l.blockBytes(slots)
		per := max(1, frameBytes/block)
		for first := from; first < to; first += per {
			cnt := min(per, to-first)
			start := len(t.buf)
			t.buf = appendFrameStart(t.buf)
			for layer := first; layer < first+cnt; layer++ {
				var err error
				if t.buf, err = t.src.AppendKV(t.buf, layer, page, slots); err != nil {
					return fmt.Errorf("transfer: request %d page %d layer %d: source: %w", t.req.ID, page, layer, err)
				}
			}
			if got := len(t.buf) - start - headerSize; got != cnt*block {
				return fmt.Errorf("transfer: request %d page %d: source gave %d bytes for %d layers, want %d", t.req.ID, page, got, cnt, cnt*block)
			}
			h := header{typ: framePage, req: t.req.ID, page: uint32(page), layer: uint16(first), layers: uint16(cnt)}
			t.sums[page] = chainSum(t.sums[page], finishFrame(t.buf, start, h))
			if len(t.buf) >= flushBytes {
				if err := t.flush(ctx); err != nil {
					return err
				}
			}
		}
	}
	return t.flush(ctx)
}

// verdictEarly turns an answer that came before the completion record into
// an error: only NACK or ABORT can legitimately arrive then.
func (t *stream) verdictEarly() error {
	if t.result != nil {
		return t.result
	}
	return fmt.Errorf("transfer: request %d: ACK before the completion record: %w", t.req.ID, ErrProtocol)
}

// flush writes the buffered frames within StallTimeout. The deadline is set
// before the cancellation checks so an interrupt cannot be overwritten.
func (t *stream) flush(ctx context.Context) error {
	if len(t.buf) == 0 {
		return nil
	}
	t.c.nc.SetWriteDeadline(time.Now().Add(t.cfg.StallTimeout))
	if ctx.Err() != nil {
		return t.ctxErr(ctx)
	}
	select {
	case <-t.readerDone:
		return t.verdictEarly()
	default:
	}
	n, err := t.c.nc.Write(t.buf)
	if err != nil {
		t.dirty, t.writeFailed = n > 0, true
		switch {
		case ctx.Err() != nil:
			return t.ctxErr(ctx)
		case errors.Is(err, os.ErrDeadlineExceeded):
			select {
			case <-t.readerDone:
				return t.verdictEarly()
			default:
			}
			return fmt.Errorf("transfer: request %d: decode read nothing for %v: %w", t.req.ID, t.cfg.StallTimeout, ErrDeadline)
		default:
			return fmt.Errorf("transfer: request %d: %w: %w", t.req.ID, ErrConnLost, err)
		}
	}
	t.buf = t.buf[:0]
	t.begun = true
	return nil
}
