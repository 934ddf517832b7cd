package tenant

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"os"
)

// Prefix-cache salts are secrets (DESIGN I6, I9): a salt anyone can compute
// from the public tenant id would let them address that tenant's cache
// entries in any deployment that ever shares keys across salts. A salt is
// either set in the tenants file (cache_salt) or HMAC-SHA256(server secret,
// tenant id). The server secret comes from --tenant-secret FILE; without
// one, each process draws a random secret at start, so salts are
// unguessable and simply do not survive a restart (the cache is in memory).
//
// Rotating the secret changes every derived salt at once: the old entries
// can no longer be addressed by anyone and age out of the cache like any
// unreferenced prefix, which is the safe way to empty it.

// minSecret is the shortest server secret accepted.
const minSecret = 16

var processSecret = func() []byte {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return b
}()

// SaltFor derives a tenant's salt from a server secret.
func SaltFor(secret []byte, id string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("bulkhead/tenant-salt/v2\x00"))
	m.Write([]byte(id))
	return m.Sum(nil)
}

// LoadSecret reads a server secret file (surrounding whitespace ignored).
func LoadSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tenant: secret: %w", err)
	}
	b = bytes.TrimSpace(b)
	if len(b) < minSecret {
		return nil, fmt.Errorf("tenant: secret %s holds %d bytes, want at least %d (e.g. head -c 32 /dev/urandom | base64 > %s)", path, len(b), minSecret, path)
	}
	return b, nil
}

// UseSecret re-derives, from secret, the salt of every tenant that has no
// cache_salt of its own. Call it before serving.
func (r *Registry) UseSecret(secret []byte) {
	for _, t := range r.tenants {
		if bytes.Equal(t.CacheSalt, DeriveSalt(t.ID)) {
			t.CacheSalt = SaltFor(secret, t.ID)
		}
	}
}
