package tenant

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// ErrLimited is wrapped by every *LimitError.
var ErrLimited = errors.New("tenant: limit reached")

// Limit reasons, used as the error code and the rejection metric label.
const (
	ReasonConcurrency = "concurrency_limit"
	ReasonTokens      = "tokens_per_minute"
)

// LimitError rejects a request for a tenant limit; the server answers it
// with 429 and a Retry-After header.
type LimitError struct {
	Reason     string
	RetryAfter time.Duration
	Limit      int
}

func (e *LimitError) Error() string {
	switch e.Reason {
	case ReasonConcurrency:
		return fmt.Sprintf("too many concurrent requests: this API key may run %d at once", e.Limit)
	default:
		return fmt.Sprintf("token rate limit reached: this API key may use %d tokens per minute; retry in %ds",
			e.Limit, retrySeconds(e.RetryAfter))
	}
}

func (e *LimitError) Unwrap() error { return ErrLimited }

// RetryAfterSeconds is the Retry-After header value: whole seconds, at least 1.
func (e *LimitError) RetryAfterSeconds() int { return retrySeconds(e.RetryAfter) }

func retrySeconds(d time.Duration) int {
	s := int(math.Ceil(d.Seconds()))
	if s < 1 {
		s = 1
	}
	return s
}

// Limiter enforces a tenant's concurrency and token-rate limits. The token
// limit is a bucket holding at most one minute of tokens and refilling
// continuously; a request is admitted while the bucket is positive and its
// actual tokens are charged as they are used, so the bucket can go negative
// and the next request waits until it refills.
type Limiter struct {
	maxConcurrent int
	tpm           int
	now           func() time.Time

	mu       sync.Mutex
	running  int
	balance  float64
	refilled time.Time
}

// NewLimiter returns a limiter; 0 disables a limit. now is the clock (nil:
// time.Now), a seam for tests.
func NewLimiter(maxConcurrent, tokensPerMinute int, now func() time.Time) *Limiter {
	return newLimiter(maxConcurrent, tokensPerMinute, now)
}

func newLimiter(maxConcurrent, tpm int, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{maxConcurrent: maxConcurrent, tpm: tpm, now: now, balance: float64(tpm), refilled: now()}
}

// Acquire admits one request or returns a *LimitError. On success the
// caller must call Release exactly once on the returned lease.
func (l *Limiter) Acquire() (*Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.maxConcurrent > 0 && l.running >= l.maxConcurrent {
		return nil, &LimitError{Reason: ReasonConcurrency, RetryAfter: time.Second, Limit: l.maxConcurrent}
	}
	if l.tpm > 0 {
		l.refillLocked()
		if l.balance <= 0 {
			perSec := float64(l.tpm) / 60
			wait := time.Duration((-l.balance + 1) / perSec * float64(time.Second))
			return nil, &LimitError{Reason: ReasonTokens, RetryAfter: wait, Limit: l.tpm}
		}
	}
	l.running++
	return &Lease{l: l}, nil
}

func (l *Limiter) refillLocked() {
	now := l.now()
	elapsed := now.Sub(l.refilled).Seconds()
	if elapsed > 0 {
		l.balance = math.Min(float64(l.tpm), l.balance+elapsed*float64(l.tpm)/60)
		l.refilled = now
	}
}

// Running returns the number of requests holding a lease.
func (l *Limiter) Running() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.running
}

// Lease is one admitted request's hold on its tenant's limits.
type Lease struct {
	l        *Limiter
	released bool
}

// Charge records n tokens used by the request.
func (s *Lease) Charge(n int) {
	if n <= 0 || s.l.tpm == 0 {
		return
	}
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	s.l.refillLocked()
	s.l.balance -= float64(n)
}

// Release ends the request's concurrency hold; later calls do nothing.
func (s *Lease) Release() {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	if !s.released {
		s.released = true
		s.l.running--
	}
}
