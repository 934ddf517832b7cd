package tenant

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
)

const saltFile = `
[[tenant]]
id = "acme"
api_key_sha256 = ["` + "0000000000000000000000000000000000000000000000000000000000000001" + `"]

[[tenant]]
id = "globex"
api_key_sha256 = ["` + "0000000000000000000000000000000000000000000000000000000000000002" + `"]
cache_salt = "globex-salt"
`

func TestSaltIsNotComputableFromThePublicID(t *testing.T) {
	r, err := Parse([]byte(saltFile))
	if err != nil {
		t.Fatal(err)
	}
	acme := r.Lookup("acme")
	public := sha256.Sum256([]byte("bulkhead/tenant-salt/v1\x00acme"))
	for _, guess := range [][]byte{public[:], []byte("acme"), SaltFor(nil, "acme"), SaltFor([]byte("acme"), "acme")} {
		if bytes.Equal(acme.CacheSalt, guess) {
			t.Fatalf("acme's salt %x is computable from its id", acme.CacheSalt)
		}
	}
	if len(acme.CacheSalt) < 16 {
		t.Fatalf("salt of %d bytes", len(acme.CacheSalt))
	}
	if a := Anonymous().Tenants()[0]; bytes.Equal(a.CacheSalt, SaltFor(nil, AnonymousID)) {
		t.Fatal("anonymous salt computable")
	}
}

func TestServerSecretDerivesStableSaltsAndKeepsConfiguredOnes(t *testing.T) {
	p := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(p, []byte("  0123456789abcdef0123\n"), 0o600)
	secret, err := LoadSecret(p)
	if err != nil {
		t.Fatal(err)
	}
	salts := func(secret []byte) (string, string) {
		r, err := Parse([]byte(saltFile))
		if err != nil {
			t.Fatal(err)
		}
		r.UseSecret(secret)
		return string(r.Lookup("acme").CacheSalt), string(r.Lookup("globex").CacheSalt)
	}
	a1, g1 := salts(secret)
	a2, _ := salts(secret)
	a3, g3 := salts([]byte("another-secret-of-enough-bytes"))
	if a1 != a2 || a1 != string(SaltFor(secret, "acme")) {
		t.Error("the same secret must give the same salt (gateway restarts, several gateways)")
	}
	if a1 == a3 {
		t.Error("rotating the secret must change derived salts (emptying the cache)")
	}
	if g1 != "globex-salt" || g3 != "globex-salt" {
		t.Errorf("configured cache_salt replaced: %q %q", g1, g3)
	}
	os.WriteFile(p, []byte("short"), 0o600)
	if _, err := LoadSecret(p); err == nil {
		t.Error("accepted a 5-byte secret")
	}
}
