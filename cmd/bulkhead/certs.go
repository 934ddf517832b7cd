package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bulkhead-llm/bulkhead/internal/certs"
)

// runCerts writes a quick-start cluster CA and per-role certificates, each
// in the cert-manager layout (tls.crt, tls.key, ca.crt).
func runCerts(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("certs", "--out DIR [flags]", stderr)
	out := fs.String("out", "", "directory to write the CA and certificates to (required)")
	prefill := fs.Int("prefill", 1, "prefill worker certificates to issue")
	decode := fs.Int("decode", 1, "decode worker certificates to issue")
	routers := fs.Bool("llmd-routers", false, "also issue router-<i>, the certificate of the llm-d sidecar beside decode-<i> (identity router/decode-<i>)")
	hosts := fs.String("hosts", "localhost,127.0.0.1,::1", "comma-separated DNS names and IPs the certificates are valid for")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() != 0 {
		fs.Usage()
		return &exitCode{2, errors.New("need --out DIR")}
	}
	ids, err := certs.WriteCluster(*out, certs.ClusterSpec{Prefill: *prefill, Decode: *decode, Routers: *routers, Hosts: strings.Split(*hosts, ",")})
	if err != nil {
		return err
	}
	names := make([]string, 0, len(ids))
	for n := range ids {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(stdout, "CA: %s (keep ca.key offline)\n", filepath.Join(*out, "ca", "ca.crt"))
	for _, n := range names {
		fmt.Fprintf(stdout, "%-10s %s  %s\n", n, ids[n].URI(), filepath.Join(*out, n))
	}
	fmt.Fprintf(stdout, "\nstart a role with --tls-dir %s/<name>, or --tls-cert/--tls-key/--tls-ca\n", *out)
	return nil
}

// tlsFlags name one process's credentials: a directory in the
// cert-manager layout, or the three files.
type tlsFlags struct {
	dir, cert, key, ca string
	creds              *certs.Credentials // given in process (demo); else loaded
}

func (t *tlsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.dir, "tls-dir", "", "directory holding tls.crt, tls.key and ca.crt (a cert-manager Secret volume)")
	fs.StringVar(&t.cert, "tls-cert", "", "this process's certificate (PEM)")
	fs.StringVar(&t.key, "tls-key", "", "this process's private key (PEM)")
	fs.StringVar(&t.ca, "tls-ca", "", "the cluster CA certificate (PEM)")
}

// load returns the credentials, or nil when none were named.
func (t *tlsFlags) load() (*certs.Credentials, error) {
	if t.creds != nil {
		return t.creds, nil
	}
	f := certs.Files{Cert: t.cert, Key: t.key, CA: t.ca}
	if t.dir != "" {
		d := certs.InDir(t.dir)
		if f.Cert == "" {
			f.Cert = d.Cert
		}
		if f.Key == "" {
			f.Key = d.Key
		}
		if f.CA == "" {
			f.CA = d.CA
		}
	}
	if f == (certs.Files{}) {
		return nil, nil
	}
	c, err := certs.Load(f)
	if err != nil {
		return nil, &exitCode{2, err}
	}
	return c, nil
}

// tlsListen listens on addr, with TLS when cfg is set.
func tlsListen(addr string, cfg *tls.Config) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil || cfg == nil {
		return ln, err
	}
	return tls.NewListener(ln, cfg), nil
}

// httpsURLs turns worker URLs given as host:port or http:// into https://.
func httpsURLs(u urlList) []string {
	out := make([]string, len(u))
	for i, s := range u {
		out[i] = "https://" + strings.TrimPrefix(strings.TrimPrefix(s, "http://"), "https://")
	}
	return out
}
