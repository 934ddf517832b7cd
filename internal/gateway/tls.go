package gateway

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/certs"
)

// TLSClient is the gateway's HTTP client for workers with mutual TLS
// (DESIGN I9): it presents the gateway certificate and talks only to
// prefill or decode workers the cluster CA vouches for.
func TLSClient(c *certs.Credentials) *http.Client {
	cfg := c.ClientConfig(func(id certs.Identity) error {
		if id.Role != certs.RolePrefill && id.Role != certs.RoleDecode {
			return fmt.Errorf("gateway: peer %s is not a worker", id)
		}
		return nil
	})
	return &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		TLSClientConfig:     cfg,
		ForceAttemptHTTP2:   false,
		MaxIdleConnsPerHost: 64,
	}}
}

// provenIdentity is the identity the worker's TLS certificate proved, or
// "" over plaintext; what the worker says about itself is not used.
func provenIdentity(resp *http.Response) string {
	if resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 {
		return ""
	}
	id, err := certs.IdentityOf(resp.TLS.PeerCertificates[0])
	if err != nil {
		return ""
	}
	return id.URI()
}
