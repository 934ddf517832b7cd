// Package certs issues and loads the cluster's mutual-TLS credentials
// (DESIGN I9). One cluster CA signs a certificate per process; the
// certificate's identity is a URI SAN spiffe://bulkhead/<role>/<name>, so a
// peer proves both that the CA vouches for it and which role it plays.
//
// On disk every identity is a directory in the cert-manager Secret layout
// (tls.crt, tls.key, ca.crt), so a Kubernetes Secret mounted as a volume is
// read the same way as the output of `bulkhead certs`.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Roles a certificate can name.
const (
	RoleGateway = "gateway"
	RolePrefill = "prefill"
	RoleDecode  = "decode"
	RoleAdmin   = "admin"
	// RoleRouter is an llm-d routing sidecar: router/<name> stands for the
	// decode worker decode/<name> it runs beside (internal/worker, llmd.go).
	RoleRouter = "router"
)

// Identity is who a certificate says its holder is.
type Identity struct {
	Role string
	Name string
}

// URI is the SPIFFE-style URI SAN of the identity.
func (id Identity) URI() string { return "spiffe://bulkhead/" + id.Role + "/" + id.Name }

func (id Identity) String() string { return id.URI() }

// ErrNoIdentity is returned when a certificate carries no bulkhead URI SAN.
var ErrNoIdentity = errors.New("certs: certificate names no spiffe://bulkhead/<role>/<name> identity")

// ParseIdentity reads the identity from a URI SAN.
func ParseIdentity(u *url.URL) (Identity, bool) {
	if u == nil || u.Scheme != "spiffe" || u.Host != "bulkhead" {
		return Identity{}, false
	}
	parts := strings.Split(strings.TrimPrefix(u.Path, "/"), "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return Identity{}, false
	}
	return Identity{Role: parts[0], Name: parts[1]}, true
}

// IdentityOf returns the identity of a (verified) certificate.
func IdentityOf(c *x509.Certificate) (Identity, error) {
	for _, u := range c.URIs {
		if id, ok := ParseIdentity(u); ok {
			return id, nil
		}
	}
	return Identity{}, ErrNoIdentity
}

// PeerIdentity returns the identity of the verified leaf of a TLS connection.
func PeerIdentity(cs *tls.ConnectionState) (Identity, error) {
	if cs == nil || len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return Identity{}, errors.New("certs: peer presented no verified certificate")
	}
	return IdentityOf(cs.VerifiedChains[0][0])
}

// CA is a cluster certificate authority held in memory.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	PEM  []byte // the certificate, PEM-encoded
}

// NewCA creates a self-signed cluster CA valid for the given time.
func NewCA(validFor time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "bulkhead cluster CA"},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(validFor),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// Issued is one identity's key pair and the CA that signed it.
type Issued struct {
	CertPEM, KeyPEM, CAPEM []byte
}

// Issue signs a certificate for id, usable as both TLS client and server,
// valid for the given hosts (DNS names or IP addresses) besides the URI SAN.
func (ca *CA) Issue(id Identity, hosts []string, validFor time.Duration) (*Issued, error) {
	u, err := url.Parse(id.URI())
	if err != nil {
		return nil, err
	}
	if _, ok := ParseIdentity(u); !ok {
		return nil, fmt.Errorf("certs: invalid identity %q", id.URI())
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: id.Role + "/" + id.Name},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(validFor),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		URIs:         []*url.URL{u},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &Issued{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
		CAPEM:   ca.PEM,
	}, nil
}

// Files names the three files of one identity.
type Files struct{ Cert, Key, CA string }

// InDir returns the cert-manager layout of dir.
func InDir(dir string) Files {
	return Files{Cert: filepath.Join(dir, "tls.crt"), Key: filepath.Join(dir, "tls.key"), CA: filepath.Join(dir, "ca.crt")}
}

// Write stores the identity in dir in the cert-manager layout; the key is
// readable by its owner only.
func (is *Issued) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f := InDir(dir)
	for _, w := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{{f.Cert, is.CertPEM, 0o644}, {f.Key, is.KeyPEM, 0o600}, {f.CA, is.CAPEM, 0o644}} {
		if err := os.WriteFile(w.path, w.data, w.mode); err != nil {
			return err
		}
	}
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return n
}
