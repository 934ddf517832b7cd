package transfer

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// Payload layouts of the control frames. All integers are little-endian.

const (
	helloSize  = 52 // digest[32] pageSize u32 dtype u32 layers u32 kvDim u32 maxContext u32
	beginSize  = 12 // nonce u64 tokens u32
	doneFixed  = 64 // nonce u64 tokens u32 pageSize u32 dtype u32 layers u32 kvDim u32 digest[32] pages u32
	maxMessage = 1024
)

func appendLayout(b []byte, l Layout) []byte {
	b = append(b, l.ModelDigest[:]...)
	b = le.AppendUint32(b, uint32(l.PageSize))
	b = le.AppendUint32(b, uint32(l.DType))
	b = le.AppendUint32(b, uint32(l.Layers))
	return le.AppendUint32(b, uint32(l.KVDim))
}

// parseLayout reads the 48 bytes appendLayout writes. Values are not range
// checked here: compare against the local layout rejects anything odd.
func parseLayout(b []byte) Layout {
	var l Layout
	copy(l.ModelDigest[:], b[:32])
	l.PageSize = int(le.Uint32(b[32:]))
	l.DType = gguf.Type(le.Uint32(b[36:]))
	l.Layers = int(le.Uint32(b[40:]))
	l.KVDim = int(le.Uint32(b[44:]))
	return l
}

// appendHello writes a HELLO payload: the layout, then the max context, so
// a peer restarted with another context is refused at the handshake.
func appendHello(b []byte, l Layout) []byte {
	b = appendLayout(b, l)
	return le.AppendUint32(b, uint32(l.MaxContext))
}

func parseHello(b []byte) (Layout, error) {
	if len(b) != helloSize {
		return Layout{}, fmt.Errorf("transfer: HELLO payload %d bytes, want %d: %w", len(b), helloSize, ErrProtocol)
	}
	l := parseLayout(b)
	l.MaxContext = int(le.Uint32(b[48:]))
	return l, nil
}

type begin struct {
	nonce  uint64
	tokens int
}

func appendBegin(b []byte, m begin) []byte {
	b = le.AppendUint64(b, m.nonce)
	return le.AppendUint32(b, uint32(m.tokens))
}

func parseBegin(b []byte) (begin, error) {
	if len(b) != beginSize {
		return begin{}, fmt.Errorf("transfer: BEGIN payload %d bytes, want %d: %w", len(b), beginSize, ErrProtocol)
	}
	return begin{nonce: le.Uint64(b), tokens: int(le.Uint32(b[8:]))}, nil
}

// done is the completion record.
type done struct {
	nonce  uint64
	tokens int
	layout Layout
	sums   []uint32 // one checksum per page
}

func appendDone(b []byte, m done) []byte {
	b = le.AppendUint64(b, m.nonce)
	b = le.AppendUint32(b, uint32(m.tokens))
	b = le.AppendUint32(b, uint32(m.layout.PageSize))
	b = le.AppendUint32(b, uint32(m.layout.DType))
	b = le.AppendUint32(b, uint32(m.layout.Layers))
	b = le.AppendUint32(b, uint32(m.layout.KVDim))
	b = append(b, m.layout.ModelDigest[:]...)
	b = le.AppendUint32(b, uint32(len(m.sums)))
	for _, s := range m.sums {
		b = le.AppendUint32(b, s)
	}
	return b
}

func parseDone(b []byte) (done, error) {
	if len(b) < doneFixed {
		return done{}, fmt.Errorf("transfer: DONE payload %d bytes, want at least %d: %w", len(b), doneFixed, ErrProtocol)
	}
	m := done{nonce: le.Uint64(b), tokens: int(le.Uint32(b[8:]))}
	m.layout.PageSize = int(le.Uint32(b[12:]))
	m.layout.DType = gguf.Type(le.Uint32(b[16:]))
	m.layout.Layers = int(le.Uint32(b[20:]))
	m.layout.KVDim = int(le.Uint32(b[24:]))
	copy(m.layout.ModelDigest[:], b[28:60])
	n := int(le.Uint32(b[60:]))
	if rest := len(b) - doneFixed; rest%4 != 0 || rest/4 != n {
		return done{}, fmt.Errorf("transfer: DONE lists %d page checksums in %d bytes: %w", n, len(b)-doneFixed, ErrProtocol)
	}
	m.sums = make([]uint32, n)
	for i := range m.sums {
		m.sums[i] = le.Uint32(b[doneFixed+4*i:])
	}
	return m, nil
}

// refusal is the payload of NACK and ABORT: why the request ended.
type refusal struct {
	code uint16
	msg  string
}

func appendRefusal(b []byte, err error) []byte {
	msg := err.Error()
	if len(msg) > maxMessage {
		msg = strings.ToValidUTF8(msg[:maxMessage], "")
	}
	b = le.AppendUint16(b, codeOf(err))
	return append(b, msg...)
}

func parseRefusal(b []byte) (refusal, error) {
	if len(b) < 2 || len(b) > 2+maxMessage || !utf8.Valid(b[2:]) {
		return refusal{}, fmt.Errorf("transfer: malformed NACK/ABORT payload of %d bytes: %w", len(b), ErrProtocol)
	}
	return refusal{code: le.Uint16(b), msg: string(b[2:])}, nil
}

// err turns a peer's refusal into an error wrapping the sentinel its code
// names; wrap adds ErrAborted for ABORT frames.
func (r refusal) err(prefix string, wrap error) error {
	if wrap != nil {
		return fmt.Errorf("%s: %q: %w: %w", prefix, r.msg, wrap, sentinelOf(r.code))
	}
	return fmt.Errorf("%s: %q: %w", prefix, r.msg, sentinelOf(r.code))
}
