package tenant

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"
)

// ErrInvalidFile wraps every problem found in a tenants file.
var ErrInvalidFile = errors.New("tenant: invalid tenants file")

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

type fileTenant struct {
	ID              string   `toml:"id"`
	APIKeySHA256    []string `toml:"api_key_sha256"`
	MaxConcurrent   int      `toml:"max_concurrent"`
	TokensPerMinute int      `toml:"tokens_per_minute"`
	CacheSalt       string   `toml:"cache_salt"`
	ParseSpecial    bool     `toml:"parse_special"`
}

type fileFormat struct {
	Tenant []fileTenant `toml:"tenant"`
}

// LoadFile reads a tenants file (see the package comment for its format).
func LoadFile(path string) (*Registry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tenant: reading tenants file: %w", err)
	}
	r, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// Parse decodes and validates a tenants file. Unknown keys are errors: a
// misspelt limit must not silently become "unlimited".
func Parse(data []byte) (*Registry, error) {
	var f fileFormat
	md, err := toml.Decode(string(data), &f)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidFile, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		return nil, fmt.Errorf("%w: unknown keys %s", ErrInvalidFile, strings.Join(keys, ", "))
	}
	if len(f.Tenant) == 0 {
		return nil, fmt.Errorf("%w: no [[tenant]] entries", ErrInvalidFile)
	}
	r := &Registry{}
	seenID := map[string]bool{}
	seenKey := map[[32]byte]string{}
	for i, ft := range f.Tenant {
		t, err := buildTenant(ft)
		if err != nil {
			return nil, fmt.Errorf("%w: tenant %d: %v", ErrInvalidFile, i+1, err)
		}
		if seenID[t.ID] {
			return nil, fmt.Errorf("%w: tenant id %q appears twice", ErrInvalidFile, t.ID)
		}
		seenID[t.ID] = true
		for _, h := range t.keyHashes {
			if other, ok := seenKey[h]; ok {
				return nil, fmt.Errorf("%w: tenants %q and %q share an API key hash", ErrInvalidFile, other, t.ID)
			}
			seenKey[h] = t.ID
		}
		r.tenants = append(r.tenants, t)
	}
	return r, nil
}

func buildTenant(ft fileTenant) (*Tenant, error) {
	if !idPattern.MatchString(ft.ID) {
		return nil, fmt.Errorf("id %q must be 1-64 characters of letters, digits, '.', '_' or '-'", ft.ID)
	}
	if ft.MaxConcurrent < 0 {
		return nil, fmt.Errorf("%q: max_concurrent %d must be >= 0 (0: unlimited)", ft.ID, ft.MaxConcurrent)
	}
	if ft.TokensPerMinute < 0 {
		return nil, fmt.Errorf("%q: tokens_per_minute %d must be >= 0 (0: unlimited)", ft.ID, ft.TokensPerMinute)
	}
	if len(ft.APIKeySHA256) == 0 {
		return nil, fmt.Errorf("%q: api_key_sha256 needs at least one key hash", ft.ID)
	}
	t := &Tenant{ID: ft.ID, MaxConcurrent: ft.MaxConcurrent, TokensPerMinute: ft.TokensPerMinute, ParseSpecial: ft.ParseSpecial}
	for j, s := range ft.APIKeySHA256 {
		h, err := parseKeyHash(s)
		if err != nil {
			return nil, fmt.Errorf("%q: api_key_sha256[%d]: %v", ft.ID, j, err)
		}
		t.keyHashes = append(t.keyHashes, h)
	}
	if ft.CacheSalt != "" {
		t.CacheSalt = []byte(ft.CacheSalt)
	} else {
		t.CacheSalt = DeriveSalt(ft.ID)
	}
	t.limiter = newLimiter(t.MaxConcurrent, t.TokensPerMinute, nil)
	return t, nil
}
