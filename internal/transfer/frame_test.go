package transfer

import (
	"bytes"
	"errors"
	"hash/crc32"
	"io"
	"testing"

	"pgregory.net/rapid"
)

// reseal recomputes a frame's checksum after a test edited its header.
func reseal(f []byte) []byte {
	psum := crc32.Checksum(f[headerSize:], castagnoli)
	le.PutUint32(f[24:], crc32.Update(psum, castagnoli, f[:24]))
	return f
}

func decodeOne(b []byte, maxPayload int) (header, []byte, error) {
	fr := frameReader{r: bytes.NewReader(b), maxPayload: maxPayload}
	h, payload, _, err := fr.next()
	return h, payload, err
}

func TestFrameDecoderRejectsMalformedFrames(t *testing.T) {
	good := func() []byte { return appendFrame(nil, frameAck, 5, nil) }
	page := func() []byte {
		b := append(appendFrameStart(nil), make([]byte, 16)...)
		finishFrame(b, 0, header{typ: framePage, req: 5, page: 1, layer: 2, layers: 1})
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"bad magic", reseal(func() []byte { b := good(); b[0] = 'X'; return b }()), ErrProtocol},
		{"unknown type", reseal(func() []byte { b := good(); b[3] = 99; return b }()), ErrProtocol},
		{"type zero", reseal(func() []byte { b := good(); b[3] = 0; return b }()), ErrProtocol},
		{"other version outside HELLO", reseal(func() []byte { b := good(); b[2] = Version + 1; return b }()), ErrProtocol},
		{"page fields on a control frame", reseal(func() []byte { b := good(); b[12] = 1; return b }()), ErrProtocol},
		{"PAGE with no layers", reseal(func() []byte { b := page(); le.PutUint16(b[18:], 0); return b }()), ErrProtocol},
		{"payload over the limit", reseal(func() []byte { b := good(); le.PutUint32(b[20:], 1<<30); return b }()), ErrProtocol},
		{"flipped payload bit", func() []byte { b := page(); b[headerSize+3] ^= 1; return b }(), ErrChecksum},
		{"flipped header bit", func() []byte { b := page(); b[13] ^= 1; return b }(), ErrChecksum},
		{"truncated header", good()[:10], io.ErrUnexpectedEOF},
		{"truncated payload", page()[:headerSize+4], io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := decodeOne(tc.b, 1<<20); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestFrameRoundTrip(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		typ := frameType(rapid.IntRange(int(frameHello), int(frameAbort)).Draw(rt, "type"))
		h := header{typ: typ, req: rapid.Uint64().Draw(rt, "req")}
		if typ == framePage {
			h.page = rapid.Uint32().Draw(rt, "page")
			h.layer = rapid.Uint16().Draw(rt, "layer")
			h.layers = rapid.Uint16Range(1, 1<<16-1).Draw(rt, "layers")
		}
		payload := rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(rt, "payload")
		b := append(appendFrameStart(nil), payload...)
		psum := finishFrame(b, 0, h)
		fr := frameReader{r: bytes.NewReader(b), maxPayload: 300}
		got, gotPayload, gotSum, err := fr.next()
		if err != nil {
			rt.Fatal(err)
		}
		h.version, h.length, h.sum = Version, uint32(len(payload)), got.sum
		if got != h || !bytes.Equal(gotPayload, payload) || gotSum != psum || psum != crc32.Checksum(payload, castagnoli) {
			rt.Fatalf("decoded %+v, want %+v", got, h)
		}
	})
}

func TestControlBodiesRoundTrip(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := done{
			nonce:  rapid.Uint64().Draw(rt, "nonce"),
			tokens: rapid.IntRange(0, 1<<31).Draw(rt, "tokens"),
			layout: testLayout,
			sums:   rapid.SliceOf(rapid.Uint32()).Draw(rt, "sums"),
		}
		got, err := parseDone(appendDone(nil, m))
		if err != nil || got.nonce != m.nonce || got.tokens != m.tokens || got.layout != m.layout || len(got.sums) != len(m.sums) {
			rt.Fatalf("DONE round trip: %+v, %v", got, err)
		}
		for i := range m.sums {
			if got.sums[i] != m.sums[i] {
				rt.Fatalf("sum %d", i)
			}
		}
		l, err := parseHello(appendHello(nil, testLayout))
		if err != nil || l != testLayout {
			rt.Fatalf("HELLO round trip: %+v, %v", l, err)
		}
	})
}

func TestRefusalCarriesItsSentinel(t *testing.T) {
	for code, sentinel := range wireCodes {
		if sentinel == nil {
			continue
		}
		rf, err := parseRefusal(appendRefusal(nil, sentinel))
		if err != nil || rf.code != uint16(code) || !errors.Is(rf.err("x", nil), sentinel) {
			t.Fatalf("code %d: %+v, %v", code, rf, err)
		}
	}
	long := errors.New(string(bytes.Repeat([]byte("é"), maxMessage))) // 2 bytes per rune
	if _, err := parseRefusal(appendRefusal(nil, long)); err != nil {
		t.Fatalf("a long message was cut into invalid UTF-8: %v", err)
	}
}

// FuzzFrameDecode feeds arbitrary bytes to the frame decoder and the
// control-payload parsers: they never panic, never hand out more than the
// payload limit, and accept only frames that re-encode to the same bytes.
func FuzzFrameDecode(f *testing.F) {
	f.Add(appendFrame(nil, frameHello, 0, appendHello(nil, testLayout)))
	f.Add(appendFrame(nil, frameBegin, 3, appendBegin(nil, begin{nonce: 1, tokens: 10})))
	f.Add(appendFrame(nil, frameDone, 3, appendDone(nil, done{nonce: 1, tokens: 10, layout: testLayout, sums: []uint32{1, 2, 3}})))
	f.Add(appendFrame(nil, frameNack, 3, appendRefusal(nil, ErrChecksum)))
	b := append(appendFrameStart(nil), make([]byte, 64)...)
	finishFrame(b, 0, header{typ: framePage, req: 3, page: 1, layer: 0, layers: 2})
	f.Add(b)
	const limit = 4096
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := frameReader{r: bytes.NewReader(data), maxPayload: limit}
		for {
			h, payload, _, err := fr.next()
			if err != nil {
				break
			}
			if len(payload) > limit || cap(fr.buf) > limit {
				t.Fatalf("payload %d bytes, buffer %d, limit %d", len(payload), cap(fr.buf), limit)
			}
			again := append(appendFrameStart(nil), payload...)
			finishFrame(again, 0, h)
			if h.version == Version && !bytes.Contains(data, again) {
				t.Fatalf("accepted frame %+v does not re-encode to its input", h)
			}
			switch h.typ {
			case frameHello:
				parseHello(payload)
			case frameBegin:
				parseBegin(payload)
			case frameDone:
				if m, err := parseDone(payload); err == nil && len(m.sums) > limit/4 {
					t.Fatalf("%d sums from %d bytes", len(m.sums), len(payload))
				}
			case frameNack, frameAbort:
				parseRefusal(payload)
			}
		}
	})
}
