package tenant

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// ErrUnauthorized is returned for a missing or unknown API key.
var ErrUnauthorized = errors.New("tenant: invalid or missing API key")

// AnonymousID is the id of the single tenant used when no tenants file is given.
const AnonymousID = "anonymous"

// Tenant is one customer of the server. It is immutable after loading,
// except for its Limiter, which is safe for concurrent use.
type Tenant struct {
	ID              string
	MaxConcurrent   int // 0: unlimited
	TokensPerMinute int // 0: unlimited
	// CacheSalt scopes the tenant's prefix-cache entries (DESIGN I6).
	CacheSalt []byte
	// ParseSpecial lets this tenant's text carry control tokens.
	ParseSpecial bool
	keyHashes    [][sha256.Size]byte
	limiter      *Limiter
}

// Limiter returns the tenant's usage limiter.
func (t *Tenant) Limiter() *Limiter { return t.limiter }

// Registry is the set of tenants a server knows, safe for concurrent reads.
type Registry struct {
	tenants   []*Tenant
	anonymous bool
}

// Anonymous returns a registry with one unlimited tenant that accepts any
// key, or none. Servers started without a tenants file use it and warn.
func Anonymous() *Registry {
	t := &Tenant{ID: AnonymousID, CacheSalt: DeriveSalt(AnonymousID)}
	t.limiter = newLimiter(0, 0, nil)
	return &Registry{tenants: []*Tenant{t}, anonymous: true}
}

// IsAnonymous reports whether the registry accepts any key.
func (r *Registry) IsAnonymous() bool { return r.anonymous }

// Tenants returns the tenants in file order.
func (r *Registry) Tenants() []*Tenant { return append([]*Tenant(nil), r.tenants...) }

// Lookup returns the tenant with the given id, or nil.
func (r *Registry) Lookup(id string) *Tenant {
	for _, t := range r.tenants {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// Authenticate returns the tenant owning key. The key's hash is compared
// against every stored hash in constant time; the loop never exits early.
func (r *Registry) Authenticate(key string) (*Tenant, error) {
	if r.anonymous {
		return r.tenants[0], nil
	}
	if key == "" {
		return nil, ErrUnauthorized
	}
	sum := sha256.Sum256([]byte(key))
	var found *Tenant
	for _, t := range r.tenants {
		for i := range t.keyHashes {
			if subtle.ConstantTimeCompare(sum[:], t.keyHashes[i][:]) == 1 {
				found = t
			}
		}
	}
	if found == nil {
		return nil, ErrUnauthorized
	}
	return found, nil
}

// HashKey returns the hex SHA-256 of an API key, the form the tenants file stores.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// DeriveSalt returns the default prefix-cache salt of a tenant id: an
// HMAC under this process's random secret (salt.go), never a function of
// the id alone.
func DeriveSalt(id string) []byte { return SaltFor(processSecret, id) }

func parseKeyHash(s string) ([sha256.Size]byte, error) {
	var h [sha256.Size]byte
	s = strings.ToLower(strings.TrimSpace(s))
	if len(s) != 2*sha256.Size {
		return h, fmt.Errorf("key hash must be %d hex digits, got %d characters", 2*sha256.Size, len(s))
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, fmt.Errorf("key hash is not hex: %w", err)
	}
	return h, nil
}
