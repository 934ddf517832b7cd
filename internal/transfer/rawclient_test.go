package transfer

import (
	"bufio"
	"testing"
	"time"
)

// rawClient speaks frames directly, to send what a correct Sender never does.
type rawClient struct {
	t *testing.T
	c *sconn
}

func dialRaw(t *testing.T, tr Transport, addr string, l Layout) *rawClient {
	t.Helper()
	nc, err := tr.Dial(bg(t), addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	c := &sconn{nc: nc, fr: frameReader{r: bufio.NewReader(nc), maxPayload: 4096}}
	if err := c.handshake(l, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	return &rawClient{t: t, c: c}
}

func (rc *rawClient) write(b []byte) {
	if _, err := rc.c.nc.Write(b); err != nil {
		rc.t.Fatal(err)
	}
}

func (rc *rawClient) control(typ frameType, req uint64, payload []byte) {
	rc.write(appendFrame(nil, typ, req, payload))
}

// page sends one PAGE frame and returns its payload CRC.
func (rc *rawClient) page(src *fakeSource, req uint64, tokens, page, layer int) uint32 {
	start := 0
	b := appendFrameStart(nil)
	b, _ = src.AppendKV(b, layer, page, src.l.slots(tokens, page))
	psum := finishFrame(b, start, header{typ: framePage, req: req, page: uint32(page), layer: uint16(layer), layers: 1})
	rc.write(b)
	return psum
}

// verdict reads the receiver's answer.
func (rc *rawClient) verdict() (frameType, error) {
	h, payload, _, err := rc.c.fr.next()
	if err != nil {
		return 0, err
	}
	if h.typ == frameNack || h.typ == frameAbort {
		rf, err := parseRefusal(payload)
		if err != nil {
			return h.typ, err
		}
		return h.typ, rf.err("refused", nil)
	}
	return h.typ, nil
}

// sendAll streams a whole request and returns the per-page checksums.
func (rc *rawClient) sendAll(src *fakeSource, req uint64, tokens int) []uint32 {
	sums := make([]uint32, src.l.Pages(tokens))
	for layer := range src.l.Layers {
		for page := range sums {
			sums[page] = chainSum(sums[page], rc.page(src, req, tokens, page, layer))
		}
	}
	return sums
}
