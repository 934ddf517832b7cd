package certs

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// ClusterSpec says which identities a quick-start cluster gets.
type ClusterSpec struct {
	Prefill, Decode int // number of workers of each role
	// Routers issues, per decode worker decode-<i>, the certificate of the
	// llm-d routing sidecar beside it: dir router-<i>, identity
	// router/decode-<i> (RoleRouter).
	Routers  bool
	Hosts    []string // DNS names / IPs every certificate is also valid for
	ValidFor time.Duration
}

// WriteCluster creates a CA in dir/ca (ca.crt, ca.key) and one directory per
// identity in the cert-manager layout: dir/gateway, dir/admin,
// dir/prefill-<i>, dir/decode-<i> (and dir/router-<i> with Routers). It
// returns the identities by directory name.
func WriteCluster(dir string, spec ClusterSpec) (map[string]Identity, error) {
	if spec.ValidFor <= 0 {
		spec.ValidFor = 365 * 24 * time.Hour
	}
	if len(spec.Hosts) == 0 {
		spec.Hosts = []string{"localhost", "127.0.0.1", "::1"}
	}
	ca, err := NewCA(spec.ValidFor)
	if err != nil {
		return nil, err
	}
	if err := ca.write(filepath.Join(dir, "ca")); err != nil {
		return nil, err
	}
	ids := map[string]Identity{"gateway": {RoleGateway, "gateway"}, "admin": {RoleAdmin, "admin"}}
	for i := 0; i < spec.Prefill; i++ {
		n := fmt.Sprintf("prefill-%d", i)
		ids[n] = Identity{RolePrefill, n}
	}
	for i := 0; i < spec.Decode; i++ {
		n := fmt.Sprintf("decode-%d", i)
		ids[n] = Identity{RoleDecode, n}
	}
	if spec.Routers {
		for i := 0; i < spec.Decode; i++ {
			ids[fmt.Sprintf("router-%d", i)] = Identity{RoleRouter, fmt.Sprintf("decode-%d", i)}
		}
	}
	for sub, id := range ids {
		is, err := ca.Issue(id, spec.Hosts, spec.ValidFor)
		if err != nil {
			return nil, err
		}
		if err := is.Write(filepath.Join(dir, sub)); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

func (ca *CA) write(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	kder, err := x509.MarshalECPrivateKey(ca.Key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca.PEM, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "ca.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
}
