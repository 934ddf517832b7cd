package transfer

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/certs"
)

// testCreds issues credentials for the named identities from one fresh CA.
func testCreds(t testing.TB, ids ...certs.Identity) []*certs.Credentials {
	t.Helper()
	ca, err := certs.NewCA(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var out []*certs.Credentials
	for _, id := range ids {
		is, err := ca.Issue(id, []string{"127.0.0.1"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		c, err := certs.FromIssued(is)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

var (
	idPrefill = certs.Identity{Role: certs.RolePrefill, Name: "p0"}
	idDecode0 = certs.Identity{Role: certs.RoleDecode, Name: "d0"}
	idDecode1 = certs.Identity{Role: certs.RoleDecode, Name: "d1"}
	idGateway = certs.Identity{Role: certs.RoleGateway, Name: "gw"}
)

func tlsReceiver(t *testing.T, c *certs.Credentials) *Receiver {
	t.Helper()
	r, err := Listen("127.0.0.1:0", ReceiverConfig{Layout: testLayout, Transport: &TLSTransport{Creds: c}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func dialCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestTLSTransferDeliversKVToTheNamedDecodeWorker(t *testing.T) {
	c := testCreds(t, idPrefill, idDecode0)
	r := tlsReceiver(t, c[1])
	s, err := Dial(dialCtx(t), SenderConfig{Layout: testLayout, Addr: r.Addr(),
		Transport: &TLSTransport{Creds: c[0], Accept: certs.Exactly(idDecode0)}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := &pair{recv: r, send: s, lg: newLedger(t), l: testLayout}
	tokens := 3*testLayout.PageSize + 5
	o := p.run(context.Background(), Request{ID: 1, Nonce: 7, Tokens: tokens}, tokens, nil)
	if o.send != nil || o.await != nil {
		t.Fatalf("send %v, await %v", o.send, o.await)
	}
	o.sink.verify(t, 1, tokens)
}

func TestTLSSenderRefusesADecodeWorkerTheReservationDidNotName(t *testing.T) {
	c := testCreds(t, idPrefill, idDecode1)
	r := tlsReceiver(t, c[1]) // a genuine decode worker, but not the one named
	_, err := Dial(dialCtx(t), SenderConfig{Layout: testLayout, Addr: r.Addr(),
		Transport: &TLSTransport{Creds: c[0], Accept: certs.Exactly(idDecode0)}})
	if err == nil || !strings.Contains(err.Error(), "d0") {
		t.Fatalf("dial to decode d1 with a reservation naming d0: err %v, want a refusal naming d0", err)
	}
}

func TestTLSSenderRefusesAPlaintextOrForeignListener(t *testing.T) {
	c := testCreds(t, idPrefill)
	plain, err := Listen("127.0.0.1:0", ReceiverConfig{Layout: testLayout})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	tr := &TLSTransport{Creds: c[0], Accept: certs.Exactly(idDecode0)}
	if _, err := Dial(dialCtx(t), SenderConfig{Layout: testLayout, Addr: plain.Addr(), Transport: tr}); err == nil {
		t.Fatal("a TLS sender handed KV to a plaintext listener")
	}
	foreign := testCreds(t, idDecode0) // right name, another CA
	r := tlsReceiver(t, foreign[0])
	if _, err := Dial(dialCtx(t), SenderConfig{Layout: testLayout, Addr: r.Addr(), Transport: tr}); err == nil {
		t.Fatal("a TLS sender accepted a decode certificate from a foreign CA")
	}
}

func TestTLSReceiverAcceptsKVOnlyFromProvenPrefillWorkers(t *testing.T) {
	c := testCreds(t, idDecode0, idGateway)
	r := tlsReceiver(t, c[0])
	for name, tr := range map[string]Transport{
		"plaintext":           TCP(),
		"gateway certificate": &TLSTransport{Creds: c[1], Accept: certs.Exactly(idDecode0)},
		"foreign CA prefill":  &TLSTransport{Creds: testCreds(t, idPrefill)[0]},
	} {
		sink := newFakeSink(testLayout)
		pend, err := r.Expect(9, 9, testLayout.PageSize, sink)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Dial(dialCtx(t), SenderConfig{Layout: testLayout, Addr: r.Addr(), Transport: tr, HandshakeTimeout: 2 * time.Second})
		if err == nil {
			src := newLedger(t).source(testLayout, 9)
			err = s.Send(dialCtx(t), Request{ID: 9, Nonce: 9, Tokens: testLayout.PageSize}, src, nil)
			s.Close()
		}
		if err == nil {
			t.Errorf("%s: the decode worker took KV from an unproven sender", name)
		}
		if sink.count() != 0 {
			t.Errorf("%s: %d KV blocks written from an unproven sender", name, sink.count())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		pend.Await(ctx) // expires; frees the reservation
		cancel()
	}
}

// BenchmarkTransferTLS is BenchmarkTransferTCP inside mutual TLS 1.3; run
// both in one invocation and compare their MB/s.
func BenchmarkTransferTLS(b *testing.B) {
	l := benchLayout
	c := testCreds(b, idPrefill, idDecode0)
	r, err := Listen("127.0.0.1:0", ReceiverConfig{Layout: l, Transport: &TLSTransport{Creds: c[1]}})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	s, err := Dial(context.Background(), SenderConfig{Layout: l, Addr: r.Addr(),
		Transport: &TLSTransport{Creds: c[0], Accept: certs.Exactly(idDecode0)}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	sendBenchTransfers(b, l, r, s)
}
