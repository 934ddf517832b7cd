package transfer

import (
	"bufio"
	"context"
	"io"
	"net"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// SmolLM2-135M's KV shape with 16-token pages, and a 2048-token prompt:
// 30 layers × 128 pages × 12 KiB = 45 MiB per transfer.
var (
	benchLayout = Layout{ModelDigest: [32]byte{0x5e}, PageSize: 16, DType: gguf.F16, Layers: 30, KVDim: 192}
	benchTokens = 2048
)

// memSource and memSink hold the whole prompt's KV as plain memory, as the
// pools do, so both benchmarks move the same bytes between the same kind of
// buffers.
type memSource struct {
	l      Layout
	blocks [][]byte // [layer*pages+page]
	pages  int
}

func newMemKV(l Layout, tokens int) *memSource {
	s := &memSource{l: l, pages: l.Pages(tokens)}
	for layer := range l.Layers {
		for page := range s.pages {
			b := make([]byte, l.blockBytes(l.slots(tokens, page)))
			for i := range b {
				b[i] = pattern(1, layer, page, i)
			}
			s.blocks = append(s.blocks, b)
		}
	}
	return s
}

func (s *memSource) AppendKV(dst []byte, layer, page, slots int) ([]byte, error) {
	return append(dst, s.blocks[layer*s.pages+page]...), nil
}

func (s *memSource) WriteKV(layer, page, slots int, kv []byte) error {
	copy(s.blocks[layer*s.pages+page], kv)
	return nil
}

func (s *memSource) Drop() {}

func BenchmarkTransferTCP(b *testing.B) {
	l := benchLayout
	r, err := Listen("127.0.0.1:0", ReceiverConfig{Layout: l})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	s, err := Dial(context.Background(), SenderConfig{Layout: l, Addr: r.Addr()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	sendBenchTransfers(b, l, r, s)
}

// sendBenchTransfers times b.N prompt transfers from s to r.
func sendBenchTransfers(b *testing.B, l Layout, r *Receiver, s *Sender) {
	b.Helper()
	src, dst := newMemKV(l, benchTokens), newMemKV(l, benchTokens)
	b.SetBytes(l.Bytes(benchTokens))
	b.ResetTimer()
	for i := range b.N {
		id := uint64(i + 1)
		pend, err := r.Expect(id, id, benchTokens, dst)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Send(context.Background(), Request{ID: id, Nonce: id, Tokens: benchTokens}, src, nil); err != nil {
			b.Fatal(err)
		}
		if err := pend.Await(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawTCPCopy is the ceiling: the same blocks written back to back
// over one loopback TCP connection, batched like the sender, and read
// through the same size of read buffer into the same destination blocks,
// with no framing, checksums or per-request handshake.
func BenchmarkRawTCPCopy(b *testing.B) {
	l := benchLayout
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	src, dst := newMemKV(l, benchTokens), newMemKV(l, benchTokens)
	total := l.Bytes(benchTokens)
	ready := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			ready <- err
			return
		}
		defer c.Close()
		br := bufio.NewReaderSize(c, 256<<10) // as the receiver reads
		for {
			for _, blk := range dst.blocks {
				if _, err := io.ReadFull(br, blk); err != nil {
					ready <- nil
					return
				}
			}
			if _, err := c.Write([]byte{1}); err != nil {
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 0, flushBytes+frameBytes)
	ack := make([]byte, 1)
	b.SetBytes(total)
	b.ResetTimer()
	for range b.N {
		// Page-major, all layers of a page together, batched like the sender.
		for page := range src.pages {
			for layer := range l.Layers {
				buf = append(buf, src.blocks[layer*src.pages+page]...)
			}
			if len(buf) >= flushBytes {
				if _, err := c.Write(buf); err != nil {
					b.Fatal(err)
				}
				buf = buf[:0]
			}
		}
		if len(buf) > 0 {
			if _, err := c.Write(buf); err != nil {
				b.Fatal(err)
			}
			buf = buf[:0]
		}
		if _, err := io.ReadFull(c, ack); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	c.Close()
	<-ready
}
