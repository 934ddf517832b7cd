package main

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/bulkhead-llm/bulkhead/internal/certs"
)

// demoCerts issues a throwaway cluster CA and the demo's identities in a
// temporary directory (removed again: the credentials stay in memory), so
// the demo runs the same mutual TLS a deployment does.
func demoCerts() (map[string]*certs.Credentials, error) {
	dir, err := os.MkdirTemp("", "bulkhead-demo-certs-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ids, err := certs.WriteCluster(dir, certs.ClusterSpec{Prefill: 1, Decode: 1, Hosts: []string{"127.0.0.1"}})
	if err != nil {
		return nil, err
	}
	out := map[string]*certs.Credentials{}
	for name := range ids {
		if out[name], err = certs.Load(certs.InDir(filepath.Join(dir, name))); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// noCertDecode calls a decode worker as a tenant who found its port would:
// TLS, but no client certificate.
func (d *demo) noCertDecode(ctx context.Context, base string) (int, string) {
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	body := `{"transfer_id":1,"nonce":1,"request":{"Tenant":"alice","Prompt":[1],"MaxTokens":4}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/worker/decode", strings.NewReader(body))
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}
