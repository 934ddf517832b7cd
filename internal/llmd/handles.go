package llmd

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"sync"
	"time"
)

// ErrUnknownHandle is a handle this worker never issued, or issued and has
// since consumed or expired: the three are one answer, so a caller learns
// nothing about other requests' handles.
var ErrUnknownHandle = errors.New("llmd: bulkhead_handle is unknown, already used or expired")

// ErrExpired ends a lease nobody fetched in time.
var ErrExpired = errors.New("llmd: KV lease expired before the decode worker fetched it")

// Binding is what a handle may be used for.
type Binding struct {
	// Decode is the identity URI of the only decode worker that may fetch
	// the KV ("" without TLS, where the worker listens on loopback only).
	Decode string
	Tenant string
	Prompt [32]byte // PromptDigest
	Tokens int      // positions the KV covers
}

// Lease is one issued handle's KV.
type Lease[V any] struct {
	Binding
	Value V
	timer *time.Timer
}

// Table holds a prefill worker's leased KV under one-time handles. A handle
// is 256 random bits; Take consumes it, and a handle not taken within TTL
// expires, its value going to Expire. Close expires every handle.
type Table[V any] struct {
	TTL    time.Duration
	Expire func(V, error)

	mu     sync.Mutex
	leases map[string]*Lease[V]
	closed bool
}

// ErrTableClosed refuses a handle on a worker shutting down.
var ErrTableClosed = errors.New("llmd: worker is shutting down")

// Issue stores v under a fresh handle.
func (t *Table[V]) Issue(b Binding, v V) (string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	h := base64.RawURLEncoding.EncodeToString(raw[:])
	l := &Lease[V]{Binding: b, Value: v}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return "", ErrTableClosed
	}
	if t.leases == nil {
		t.leases = map[string]*Lease[V]{}
	}
	t.leases[h] = l
	l.timer = time.AfterFunc(t.TTL, func() { t.expire(h, l) })
	return h, nil
}

// Take consumes a handle: on success the caller owns the lease's value.
func (t *Table[V]) Take(handle string) (*Lease[V], error) {
	t.mu.Lock()
	l := t.leases[handle]
	if l != nil && l.timer.Stop() {
		delete(t.leases, handle)
		t.mu.Unlock()
		return l, nil
	}
	t.mu.Unlock()
	return nil, ErrUnknownHandle // absent, or its timer is expiring it now
}

// Len is how many handles are outstanding.
func (t *Table[V]) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.leases)
}

func (t *Table[V]) expire(h string, l *Lease[V]) {
	t.mu.Lock()
	if t.leases[h] != l {
		t.mu.Unlock()
		return
	}
	delete(t.leases, h)
	t.mu.Unlock()
	t.Expire(l.Value, ErrExpired)
}

// Close expires every outstanding handle now and refuses new ones.
func (t *Table[V]) Close() {
	t.mu.Lock()
	t.closed = true
	var out []*Lease[V]
	for h, l := range t.leases {
		if l.timer.Stop() { // else its timer is running expire, which releases it
			out = append(out, l)
			delete(t.leases, h)
		}
	}
	t.mu.Unlock()
	for _, l := range out {
		t.Expire(l.Value, ErrTableClosed)
	}
}
