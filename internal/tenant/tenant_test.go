package tenant

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func twoTenantsFile() string {
	return fmt.Sprintf(`
[[tenant]]
id = "acme"
api_key_sha256 = [%q, %q]
max_concurrent = 2
tokens_per_minute = 600

[[tenant]]
id = "globex"
api_key_sha256 = [%q]
cache_salt = "globex-salt"
`, HashKey("acme-key-1"), strings.ToUpper(HashKey("acme-key-2")), HashKey("globex-key"))
}

func TestAuthenticateFindsTheTenantOwningTheKey(t *testing.T) {
	r, err := Parse([]byte(twoTenantsFile()))
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"acme-key-1": "acme", "acme-key-2": "acme", "globex-key": "globex"} {
		got, err := r.Authenticate(key)
		if err != nil || got.ID != want {
			t.Errorf("Authenticate(%q) = %v, %v; want tenant %q", key, got, err, want)
		}
	}
	for _, key := range []string{"", "acme-key-3", HashKey("acme-key-1")} {
		if _, err := r.Authenticate(key); !errors.Is(err, ErrUnauthorized) {
			t.Errorf("Authenticate(%q) err = %v, want ErrUnauthorized", key, err)
		}
	}
}

func TestCacheSaltIsDerivedFromIDUnlessGiven(t *testing.T) {
	r, err := Parse([]byte(twoTenantsFile()))
	if err != nil {
		t.Fatal(err)
	}
	acme, globex := r.Lookup("acme"), r.Lookup("globex")
	if string(globex.CacheSalt) != "globex-salt" {
		t.Errorf("globex salt = %q, want the configured one", globex.CacheSalt)
	}
	if string(acme.CacheSalt) != string(DeriveSalt("acme")) || string(DeriveSalt("acme")) == string(DeriveSalt("acme2")) {
		t.Errorf("derived salts must follow the id and differ between ids")
	}
}

func TestParseRejectsInvalidFiles(t *testing.T) {
	h := HashKey("k")
	cases := map[string]string{
		"no tenants":         ``,
		"bad toml":           `[[tenant]`,
		"unknown key":        fmt.Sprintf("[[tenant]]\nid=\"a\"\napi_key_sha256=[%q]\nmax_concurent=3\n", h),
		"missing keys":       "[[tenant]]\nid=\"a\"\n",
		"short hash":         "[[tenant]]\nid=\"a\"\napi_key_sha256=[\"abcd\"]\n",
		"non-hex hash":       fmt.Sprintf("[[tenant]]\nid=\"a\"\napi_key_sha256=[%q]\n", strings.Repeat("zz", 32)),
		"bad id":             fmt.Sprintf("[[tenant]]\nid=\"a b\"\napi_key_sha256=[%q]\n", h),
		"negative limit":     fmt.Sprintf("[[tenant]]\nid=\"a\"\napi_key_sha256=[%q]\nmax_concurrent=-1\n", h),
		"duplicate id":       fmt.Sprintf("[[tenant]]\nid=\"a\"\napi_key_sha256=[%q]\n[[tenant]]\nid=\"a\"\napi_key_sha256=[%q]\n", h, HashKey("j")),
		"shared key":         fmt.Sprintf("[[tenant]]\nid=\"a\"\napi_key_sha256=[%q]\n[[tenant]]\nid=\"b\"\napi_key_sha256=[%q]\n", h, h),
		"wrong type for tpm": fmt.Sprintf("[[tenant]]\nid=\"a\"\napi_key_sha256=[%q]\ntokens_per_minute=\"many\"\n", h),
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse([]byte(src)); !errors.Is(err, ErrInvalidFile) {
				t.Errorf("Parse err = %v, want ErrInvalidFile", err)
			}
		})
	}
}

func TestAnonymousRegistryAcceptsAnyKey(t *testing.T) {
	r := Anonymous()
	for _, key := range []string{"", "anything"} {
		if got, err := r.Authenticate(key); err != nil || got.ID != AnonymousID {
			t.Errorf("Authenticate(%q) = %v, %v", key, got, err)
		}
	}
}

func TestLimiterRejectsBeyondMaxConcurrentUntilReleased(t *testing.T) {
	l := NewLimiter(2, 0, nil)
	a, err1 := l.Acquire()
	_, err2 := l.Acquire()
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	_, err := l.Acquire()
	var le *LimitError
	if !errors.As(err, &le) || le.Reason != ReasonConcurrency || le.RetryAfterSeconds() < 1 {
		t.Fatalf("third Acquire err = %v, want concurrency LimitError", err)
	}
	a.Release()
	a.Release() // idempotent
	if l.Running() != 1 {
		t.Fatalf("running = %d after one release, want 1", l.Running())
	}
	if _, err := l.Acquire(); err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
}

func TestLimiterTokenBucketRefillsOverTime(t *testing.T) {
	now := time.Unix(1000, 0)
	l := NewLimiter(0, 60, func() time.Time { return now }) // one token per second
	s, err := l.Acquire()
	if err != nil {
		t.Fatal(err)
	}
	s.Charge(90) // 30 tokens over budget
	s.Release()
	_, err = l.Acquire()
	var le *LimitError
	if !errors.As(err, &le) || le.Reason != ReasonTokens {
		t.Fatalf("Acquire after overspend err = %v, want tokens LimitError", err)
	}
	if got := le.RetryAfterSeconds(); got < 30 || got > 32 {
		t.Errorf("Retry-After = %ds, want about 31s (30 tokens owed at 1/s)", got)
	}
	now = now.Add(29 * time.Second)
	if _, err := l.Acquire(); err == nil {
		t.Fatalf("Acquire after 29s admitted, bucket should still be empty")
	}
	now = now.Add(2 * time.Second)
	if _, err := l.Acquire(); err != nil {
		t.Fatalf("Acquire after 31s: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(twoTenantsFile()))
	f.Add([]byte("[[tenant]]\nid=\"a\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidFile) {
				t.Fatalf("error %v does not wrap ErrInvalidFile", err)
			}
			return
		}
		for _, tn := range r.Tenants() {
			if len(tn.keyHashes) == 0 || len(tn.CacheSalt) == 0 || tn.Limiter() == nil {
				t.Fatalf("accepted tenant %q without keys, salt or limiter", tn.ID)
			}
		}
	})
}
