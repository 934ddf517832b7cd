package transfer

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
)

// Version is the wire protocol version carried in every frame header.
const Version = 1

// MaxPayload bounds every frame's payload; a decoder never allocates more.
const MaxPayload = 16 << 20

// headerSize is the fixed frame header length; see the package comment.
const headerSize = 28

var (
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
	magic      = [2]byte{'B', 'K'}
	le         = binary.LittleEndian
)

// frameType says what a frame's payload is.
type frameType uint8

const (
	frameHello frameType = iota + 1
	frameBegin
	framePage
	frameDone
	frameAck
	frameNack
	frameAbort
	frameTypeEnd // one past the last valid type
)

var frameTypeNames = [...]string{"invalid", "HELLO", "BEGIN", "PAGE", "DONE", "ACK", "NACK", "ABORT"}

func (t frameType) String() string {
	if t < frameTypeEnd {
		return frameTypeNames[t]
	}
	return fmt.Sprintf("frameType(%d)", uint8(t))
}

// header is a decoded frame header. page, layer and layers are zero except in
// PAGE frames.
type header struct {
	version uint8
	typ     frameType
	req     uint64
	page    uint32
	layer   uint16
	layers  uint16
	length  uint32
	sum     uint32
}

// appendFrameStart appends a header placeholder; finishFrame fills it once
// the payload has been appended after it.
func appendFrameStart(b []byte) []byte { return append(b, make([]byte, headerSize)...) }

// finishFrame completes the frame that starts at b[start:]: it writes h (with
// the payload length and checksum) and returns the CRC32C of the payload
// alone, which PAGE frames feed into their page's checksum.
func finishFrame(b []byte, start int, h header) uint32 {
	f := b[start:]
	payload := f[headerSize:]
	h.version = Version
	h.length = uint32(len(payload))
	f[0], f[1], f[2], f[3] = magic[0], magic[1], h.version, byte(h.typ)
	le.PutUint64(f[4:], h.req)
	le.PutUint32(f[12:], h.page)
	le.PutUint16(f[16:], h.layer)
	le.PutUint16(f[18:], h.layers)
	le.PutUint32(f[20:], h.length)
	psum := crc32.Checksum(payload, castagnoli)
	le.PutUint32(f[24:], crc32.Update(psum, castagnoli, f[:24]))
	return psum
}

// appendFrame appends a complete control frame.
func appendFrame(b []byte, typ frameType, req uint64, payload []byte) []byte {
	start := len(b)
	b = append(appendFrameStart(b), payload...)
	finishFrame(b, start, header{typ: typ, req: req})
	return b
}

// parseHeader checks everything about a header that does not need the
// payload: magic, version (a HELLO may carry another version so the peer can
// report it), type, the zero fields, and the length limit.
func parseHeader(f *[headerSize]byte, maxPayload int) (header, error) {
	h := header{
		version: f[2],
		typ:     frameType(f[3]),
		req:     le.Uint64(f[4:]),
		page:    le.Uint32(f[12:]),
		layer:   le.Uint16(f[16:]),
		layers:  le.Uint16(f[18:]),
		length:  le.Uint32(f[20:]),
		sum:     le.Uint32(f[24:]),
	}
	switch {
	case f[0] != magic[0] || f[1] != magic[1]:
		return h, fmt.Errorf("transfer: bad frame magic %q: %w", f[:2], ErrProtocol)
	case h.typ == 0 || h.typ >= frameTypeEnd:
		return h, fmt.Errorf("transfer: unknown frame type %d: %w", f[3], ErrProtocol)
	case h.version != Version && h.typ != frameHello:
		return h, fmt.Errorf("transfer: %v frame version %d, want %d: %w", h.typ, h.version, Version, ErrProtocol)
	case int64(h.length) > int64(maxPayload):
		return h, fmt.Errorf("transfer: %v frame payload %d bytes exceeds limit %d: %w", h.typ, h.length, maxPayload, ErrProtocol)
	case h.typ == framePage && h.layers == 0:
		return h, fmt.Errorf("transfer: PAGE frame with no layers: %w", ErrProtocol)
	case h.typ != framePage && (h.page != 0 || h.layer != 0 || h.layers != 0):
		return h, fmt.Errorf("transfer: %v frame with page fields set: %w", h.typ, ErrProtocol)
	}
	return h, nil
}

// frameReader decodes frames from a stream into one reused buffer that never
// grows past maxPayload.
type frameReader struct {
	r          io.Reader
	maxPayload int
	hdr        [headerSize]byte
	buf        []byte
}

// next reads one frame. The payload aliases the reader's buffer and is valid
// until the next call; psum is the payload's own CRC32C.
func (fr *frameReader) next() (h header, payload []byte, psum uint32, err error) {
	if _, err := io.ReadFull(fr.r, fr.hdr[:]); err != nil {
		return h, nil, 0, err
	}
	h, err = parseHeader(&fr.hdr, fr.maxPayload)
	if err != nil {
		return h, nil, 0, err
	}
	n := int(h.length)
	if cap(fr.buf) < n {
		fr.buf = make([]byte, n)
	}
	payload = fr.buf[:n]
	if _, err := io.ReadFull(fr.r, payload); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return h, nil, 0, err
	}
	psum = crc32.Checksum(payload, castagnoli)
	if got := crc32.Update(psum, castagnoli, fr.hdr[:24]); got != h.sum {
		return h, nil, 0, fmt.Errorf("transfer: %v frame for request %d: CRC32C %08x, header says %08x: %w", h.typ, h.req, got, h.sum, ErrChecksum)
	}
	return h, payload, psum, nil
}
