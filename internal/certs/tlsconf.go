package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
)

// Credentials are one process's certificate and the cluster CA it trusts.
type Credentials struct {
	Cert     tls.Certificate
	Identity Identity
	Roots    *x509.CertPool
}

// Load reads a certificate, its key and the CA certificate from files.
func Load(f Files) (*Credentials, error) {
	if f.Cert == "" || f.Key == "" || f.CA == "" {
		return nil, errors.New("certs: need a certificate, a key and a CA (--tls-cert, --tls-key, --tls-ca)")
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("certs: %s / %s: %w", f.Cert, f.Key, err)
	}
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("certs: CA: %w", err)
	}
	return complete(caPEM, &cert)
}

// FromIssued builds credentials from an in-memory identity.
func FromIssued(is *Issued) (*Credentials, error) {
	cert, err := tls.X509KeyPair(is.CertPEM, is.KeyPEM)
	if err != nil {
		return nil, err
	}
	return complete(is.CAPEM, &cert)
}

// complete checks a parsed key pair against a CA bundle and reads its identity.
func complete(caPEM []byte, cert *tls.Certificate) (*Credentials, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("certs: CA file holds no PEM certificate")
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, err
	}
	cert.Leaf = leaf
	id, err := IdentityOf(leaf)
	if err != nil {
		return nil, err
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return nil, fmt.Errorf("certs: own certificate %s is not signed by the given CA: %w", id, err)
	}
	return &Credentials{Cert: *cert, Identity: id, Roots: roots}, nil
}

// ServerConfig is a TLS 1.3 server configuration that demands a client
// certificate from the cluster CA whose role is one of roles.
func (c *Credentials) ServerConfig(roles ...string) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{c.Cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    c.Roots,
		VerifyConnection: func(cs tls.ConnectionState) error {
			id, err := PeerIdentity(&cs)
			if err != nil {
				return err
			}
			if !slices.Contains(roles, id.Role) {
				return fmt.Errorf("certs: peer %s: role %q may not connect (want one of %v)", id, id.Role, roles)
			}
			return nil
		},
	}
}

// ClientConfig is a TLS 1.3 client configuration that presents c and
// accepts a server only if the cluster CA signed it and accept approves its
// identity. Host names are not checked: the identity is what the peer
// proves, and addresses are not trusted.
func (c *Credentials) ClientConfig(accept func(Identity) error) *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		Certificates:       []tls.Certificate{c.Cert},
		InsecureSkipVerify: true, // replaced by VerifyConnection below
		VerifyConnection: func(cs tls.ConnectionState) error {
			id, err := c.VerifyPeer(cs.PeerCertificates)
			if err != nil {
				return err
			}
			return accept(id)
		},
	}
}

// VerifyPeer checks a presented chain against the cluster CA and returns
// the leaf's identity.
func (c *Credentials) VerifyPeer(chain []*x509.Certificate) (Identity, error) {
	if len(chain) == 0 {
		return Identity{}, errors.New("certs: peer presented no certificate")
	}
	inter := x509.NewCertPool()
	for _, ic := range chain[1:] {
		inter.AddCert(ic)
	}
	if _, err := chain[0].Verify(x509.VerifyOptions{Roots: c.Roots, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return Identity{}, fmt.Errorf("certs: peer certificate: %w", err)
	}
	return IdentityOf(chain[0])
}

// Role accepts any identity of the given role.
func Role(role string) func(Identity) error {
	return func(id Identity) error {
		if id.Role != role {
			return fmt.Errorf("certs: peer %s is not a %s", id, role)
		}
		return nil
	}
}

// Exactly accepts only the given identity.
func Exactly(want Identity) func(Identity) error {
	return func(id Identity) error {
		if id != want {
			return fmt.Errorf("certs: peer is %s, want %s", id, want)
		}
		return nil
	}
}
