package certs

import (
	"crypto/tls"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func cluster(t *testing.T) (string, map[string]*Credentials) {
	t.Helper()
	dir := t.TempDir()
	ids, err := WriteCluster(dir, ClusterSpec{Prefill: 1, Decode: 2})
	if err != nil {
		t.Fatal(err)
	}
	creds := map[string]*Credentials{}
	for sub, id := range ids {
		c, err := Load(InDir(filepath.Join(dir, sub)))
		if err != nil {
			t.Fatalf("%s: %v", sub, err)
		}
		if c.Identity != id {
			t.Fatalf("%s: identity %v, want %v", sub, c.Identity, id)
		}
		creds[sub] = c
	}
	return dir, creds
}

// handshake runs one TLS handshake over a pipe and returns both sides' errors.
func handshake(srv, cli *tls.Config) (serverErr, clientErr error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err, err
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		a, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		a.SetDeadline(time.Now().Add(5 * time.Second))
		s := tls.Server(a, srv)
		err = s.Handshake()
		if err == nil {
			// TLS 1.3 client certificates are checked after the client's
			// handshake returns; read to learn the server's verdict.
			s.Write([]byte{1})
		}
		s.Close()
		done <- err
	}()
	b, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return err, err
	}
	c := tls.Client(b, cli)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	err = c.Handshake()
	if err == nil {
		_, err = c.Read(make([]byte, 1))
	}
	c.Close()
	return <-done, err
}

func TestServerAcceptsOnlyTheAllowedRoleFromTheCA(t *testing.T) {
	_, c := cluster(t)
	srv := c["decode-0"].ServerConfig(RolePrefill)
	if se, ce := handshake(srv, c["prefill-0"].ClientConfig(Role(RoleDecode))); se != nil || ce != nil {
		t.Fatalf("prefill → decode refused: server %v, client %v", se, ce)
	}
	if se, _ := handshake(srv, c["gateway"].ClientConfig(Role(RoleDecode))); se == nil {
		t.Fatal("decode's KV listener accepted a gateway certificate")
	}
	noCert := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}
	if se, _ := handshake(srv, noCert); se == nil {
		t.Fatal("server accepted a client without a certificate")
	}
	_, other := cluster(t) // another CA
	if se, _ := handshake(srv, other["prefill-0"].ClientConfig(Role(RoleDecode))); se == nil {
		t.Fatal("server accepted a prefill certificate from a foreign CA")
	}
}

func TestClientAcceptsOnlyTheNamedServer(t *testing.T) {
	_, c := cluster(t)
	want := c["decode-1"].Identity
	_, ce := handshake(c["decode-0"].ServerConfig(RolePrefill), c["prefill-0"].ClientConfig(Exactly(want)))
	if ce == nil || !strings.Contains(ce.Error(), "decode-1") {
		t.Fatalf("client accepted decode-0 when the reservation named decode-1 (err %v)", ce)
	}
	if se, ce := handshake(c["decode-1"].ServerConfig(RolePrefill), c["prefill-0"].ClientConfig(Exactly(want))); se != nil || ce != nil {
		t.Fatalf("the named server was refused: %v %v", se, ce)
	}
	_, other := cluster(t)
	if _, ce := handshake(other["decode-1"].ServerConfig(RolePrefill), c["prefill-0"].ClientConfig(Exactly(want))); ce == nil {
		t.Fatal("client accepted a server of the right name from a foreign CA")
	}
}

func TestLoadRefusesACertificateFromAnotherCA(t *testing.T) {
	d1, _ := cluster(t)
	d2, _ := cluster(t)
	f := InDir(filepath.Join(d1, "gateway"))
	f.CA = filepath.Join(d2, "ca", "ca.crt")
	if _, err := Load(f); err == nil {
		t.Fatal("loaded a certificate not signed by the given CA")
	}
}

func TestIdentityURI(t *testing.T) {
	id := Identity{RoleDecode, "decode-0"}
	if id.URI() != "spiffe://bulkhead/decode/decode-0" {
		t.Fatal(id.URI())
	}
}

// With Routers, each decode worker's sidecar gets router/decode-<i>, the
// name a prefill worker binds llm-d handles to.
func TestClusterIssuesRouterCertificatesForDecodeWorkers(t *testing.T) {
	dir := t.TempDir()
	ids, err := WriteCluster(dir, ClusterSpec{Prefill: 1, Decode: 2, Routers: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []Identity{{RoleRouter, "decode-0"}, {RoleRouter, "decode-1"}} {
		sub := []string{"router-0", "router-1"}[i]
		c, err := Load(InDir(filepath.Join(dir, sub)))
		if err != nil || ids[sub] != want || c.Identity != want {
			t.Errorf("%s: %v %v, want %v (%v)", sub, ids[sub], c, want, err)
		}
	}
	if ids, _ := WriteCluster(t.TempDir(), ClusterSpec{Decode: 1}); len(ids) != 3 {
		t.Errorf("without Routers: %v", ids)
	}
}
