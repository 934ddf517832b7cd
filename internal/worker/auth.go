package worker

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"

	"github.com/bulkhead-llm/bulkhead/internal/certs"
	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/transfer"
)

// A worker acts for every tenant at once, so only the gateway may talk to
// it (DESIGN I9). With credentials, every route but the liveness probes
// demands a TLS client certificate from the cluster CA naming the gateway
// role: none is 401, another role is 403. Without credentials the worker
// may only listen on loopback (ErrInsecureListen).

// ErrInsecureListen refuses a worker without credentials on a non-loopback
// address.
var ErrInsecureListen = errors.New("worker: refusing to serve without TLS credentials on a non-loopback address (give --tls-cert, --tls-key and --tls-ca, or listen on 127.0.0.1 only)")

// CheckListen returns ErrInsecureListen unless creds are given or every
// address is loopback.
func CheckListen(creds *certs.Credentials, addrs ...string) error {
	if creds != nil {
		return nil
	}
	for _, a := range addrs {
		if a == "" {
			continue
		}
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			return fmt.Errorf("worker: address %q: %w", a, err)
		}
		if host == "localhost" {
			continue
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("%w: %s", ErrInsecureListen, a)
		}
	}
	return nil
}

// ServerTLS is the worker HTTP listener's TLS configuration: client
// certificates are verified when given and demanded by requireGateway, so
// an unauthenticated client gets an HTTP 401 that says why rather than a
// bare handshake failure.
func ServerTLS(c *certs.Credentials) *tls.Config {
	cfg := c.ServerConfig()
	cfg.ClientAuth = tls.VerifyClientCertIfGiven
	cfg.VerifyConnection = nil
	return cfg
}

// requireGateway wraps the worker's routes when it has credentials.
func requireGateway(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" || r.URL.Path == "/ready" {
			next.ServeHTTP(rw, r)
			return
		}
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			writeJSON(rw, http.StatusUnauthorized, errBody("a gateway client certificate from the cluster CA is required"))
			return
		}
		id, err := certs.PeerIdentity(r.TLS)
		if err != nil || id.Role != certs.RoleGateway {
			writeJSON(rw, http.StatusForbidden, errBody(fmt.Sprintf("peer %v is not a gateway (%v)", id, err)))
			return
		}
		next.ServeHTTP(rw, r)
	})
}

func errBody(msg string) any {
	return struct {
		Error *ErrorBody `json:"error"`
	}{&ErrorBody{Message: "worker: " + msg, Kind: "unauthorized"}}
}

// kvTransport is the transport KV moves over: mutual TLS when the worker
// has credentials. accept names the only server a dial may reach.
func (w *Worker) kvTransport(accept func(certs.Identity) error) transfer.Transport {
	if w.cfg.Creds == nil {
		return w.cfg.Transport
	}
	return &transfer.TLSTransport{Inner: w.cfg.Transport, Creds: w.cfg.Creds, Accept: accept}
}

// decodeIdentity is the decode worker a prefill request's KV may go to:
// with credentials, exactly the identity the gateway read from that
// worker's certificate, never the address alone.
func (w *Worker) decodeIdentity(pr PrefillRequest) (func(certs.Identity) error, string, error) {
	if w.cfg.Creds == nil {
		return nil, pr.DecodeKV, nil
	}
	u, err := parseURI(pr.DecodeIdentity)
	if err != nil {
		return nil, "", fmt.Errorf("%w: decode_identity %q: %v", engine.ErrInvalidRequest, pr.DecodeIdentity, err)
	}
	return certs.Exactly(u), pr.DecodeIdentity + "@" + pr.DecodeKV, nil
}

func parseURI(s string) (certs.Identity, error) {
	u, err := url.Parse(s)
	if err != nil {
		return certs.Identity{}, err
	}
	id, ok := certs.ParseIdentity(u)
	if !ok || id.Role != certs.RoleDecode {
		return certs.Identity{}, errors.New("not a spiffe://bulkhead/decode/<name> identity")
	}
	return id, nil
}
