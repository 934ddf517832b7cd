package llmd

import (
	"errors"
	"sync"
	"testing"
	"time"
)

type released struct {
	mu  sync.Mutex
	got map[int]error
}

func (r *released) expire(v int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got[v] = err
}

func (r *released) of(v int) (error, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	err, ok := r.got[v]
	return err, ok
}

func TestHandleIsOneTime(t *testing.T) {
	rel := &released{got: map[int]error{}}
	tab := &Table[int]{TTL: time.Hour, Expire: rel.expire}
	h, err := tab.Issue(Binding{Tenant: "a", Tokens: 3}, 7)
	if err != nil || len(h) != 43 {
		t.Fatalf("handle %q, %v", h, err)
	}
	l, err := tab.Take(h)
	if err != nil || l.Value != 7 || l.Tenant != "a" || l.Tokens != 3 {
		t.Fatalf("take: %+v %v", l, err)
	}
	if _, err := tab.Take(h); !errors.Is(err, ErrUnknownHandle) {
		t.Fatalf("replayed handle: %v", err)
	}
	if _, err := tab.Take("forged"); !errors.Is(err, ErrUnknownHandle) {
		t.Fatalf("forged handle: %v", err)
	}
	if _, ok := rel.of(7); ok || tab.Len() != 0 {
		t.Fatal("a taken lease was expired too")
	}
}

func TestUntakenHandleExpiresAndReleases(t *testing.T) {
	rel := &released{got: map[int]error{}}
	tab := &Table[int]{TTL: 20 * time.Millisecond, Expire: rel.expire}
	h, _ := tab.Issue(Binding{}, 1)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err, ok := rel.of(1); ok {
			if !errors.Is(err, ErrExpired) {
				t.Fatalf("expired with %v", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("lease never expired")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := tab.Take(h); !errors.Is(err, ErrUnknownHandle) || tab.Len() != 0 {
		t.Fatalf("expired handle taken: %v, %d left", err, tab.Len())
	}
}

func TestCloseReleasesEveryLeaseOnce(t *testing.T) {
	rel := &released{got: map[int]error{}}
	tab := &Table[int]{TTL: time.Hour, Expire: rel.expire}
	for i := range 5 {
		if _, err := tab.Issue(Binding{}, i); err != nil {
			t.Fatal(err)
		}
	}
	tab.Close()
	for i := range 5 {
		if err, ok := rel.of(i); !ok || !errors.Is(err, ErrTableClosed) {
			t.Errorf("lease %d: %v %v", i, ok, err)
		}
	}
	if _, err := tab.Issue(Binding{}, 9); !errors.Is(err, ErrTableClosed) {
		t.Errorf("issued after close: %v", err)
	}
}

func TestParseIsStrict(t *testing.T) {
	for _, c := range []struct {
		body string
		ok   bool
	}{
		// what the sidecar sends to prefill
		{`{"do_remote_decode":true,"do_remote_prefill":false,"remote_engine_id":null,"remote_block_ids":null,"remote_host":null,"remote_port":null}`, true},
		// what vLLM returns, plus bulkhead's handle
		{`{"do_remote_prefill":true,"do_remote_decode":false,"remote_engine_id":"e","remote_block_ids":[1,2],"remote_request_id":"r","remote_host":"10.0.0.1","remote_port":9001,"tp_size":1,"bulkhead_handle":"h","bulkhead_handoff_tokens":5}`, true},
		{`{"do_remote_decode":true,"evil":1}`, false},
		{`{"do_remote_decode":true,"do_remote_prefill":true}`, false},
		{`{}`, false},
		{`[1]`, false},
	} {
		_, err := Parse([]byte(c.body))
		if (err == nil) != c.ok {
			t.Errorf("%s: %v", c.body, err)
		}
	}
	p, _ := Parse([]byte(`{"do_remote_prefill":true,"remote_host":"::1","remote_port":80}`))
	if a, err := p.Addr(); err != nil || a != "[::1]:80" {
		t.Errorf("addr %q %v", a, err)
	}
	p, _ = Parse([]byte(`{"do_remote_prefill":true,"remote_host":"h"}`))
	if _, err := p.Addr(); err == nil {
		t.Error("addr without port")
	}
}

func TestPromptDigestSeparatesTenantsAndPrompts(t *testing.T) {
	a := PromptDigest("acme", []int32{1, 2, 3})
	if a == PromptDigest("globex", []int32{1, 2, 3}) || a == PromptDigest("acme", []int32{1, 2, 4}) ||
		a != PromptDigest("acme", []int32{1, 2, 3}) || PromptDigest("a", []int32{0x6d6563}) == PromptDigest("acme", nil) {
		t.Fatal("digest does not bind tenant and tokens")
	}
}
