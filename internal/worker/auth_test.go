package worker

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/certs"
	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/loader"
)

type testCA struct {
	t  *testing.T
	ca *certs.CA
}

func newTestCA(t *testing.T) *testCA {
	ca, err := certs.NewCA(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{t, ca}
}

func (c *testCA) creds(role, name string) *certs.Credentials {
	is, err := c.ca.Issue(certs.Identity{Role: role, Name: name}, []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		c.t.Fatal(err)
	}
	cr, err := certs.FromIssued(is)
	if err != nil {
		c.t.Fatal(err)
	}
	return cr
}

// tlsWorker serves a worker with credentials over HTTPS.
func tlsWorker(t *testing.T, role Role, creds *certs.Credentials) (*Worker, *httptest.Server) {
	t.Helper()
	m, err := loader.Load(loader.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := m.NewEngine(loader.PoolOptions{MaxContext: 512, KVTokens: 2048}, engine.Config{TokenBudget: 64, MaxRunning: 4})
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(Config{Role: role, Model: m.Name, ModelDigest: m.Digest, Layers: m.Model.Config.Layers,
		KVDim: m.Model.Config.KVDim(), KVListen: "127.0.0.1:0", Creds: creds,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, eng)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(w)
	srv.TLS = ServerTLS(creds)
	srv.StartTLS()
	t.Cleanup(func() { srv.Close(); w.Shutdown(t.Context()); eng.Close() })
	return w, srv
}

func clientWith(c *certs.Credentials) *http.Client {
	var cfg *tls.Config
	if c == nil {
		cfg = &tls.Config{InsecureSkipVerify: true}
	} else {
		cfg = c.ClientConfig(func(certs.Identity) error { return nil })
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
}

func TestWorkerAnswersOnlyTheGatewayCertificate(t *testing.T) {
	ca := newTestCA(t)
	_, srv := tlsWorker(t, Decode, ca.creds(certs.RoleDecode, "d0"))
	body := `{"transfer_id":1,"nonce":1,"request":{"Tenant":"alpha","Prompt":[1],"MaxTokens":2}}`
	for _, c := range []struct {
		name   string
		client *http.Client
		want   int
	}{
		{"no certificate", clientWith(nil), http.StatusUnauthorized},
		{"prefill certificate", clientWith(ca.creds(certs.RolePrefill, "p0")), http.StatusForbidden},
		{"gateway certificate of another CA", clientWith(newTestCA(t).creds(certs.RoleGateway, "gw")), 0},
		{"gateway certificate", clientWith(ca.creds(certs.RoleGateway, "gw")), http.StatusOK},
	} {
		resp, err := c.client.Post(srv.URL+"/v1/worker/decode", "application/json", strings.NewReader(body))
		if c.want == 0 {
			if err == nil {
				resp.Body.Close()
				t.Errorf("%s: got %s, want a TLS handshake failure", c.name, resp.Status)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: POST /v1/worker/decode = %d, want %d", c.name, resp.StatusCode, c.want)
		}
	}
	resp, err := clientWith(nil).Get(srv.URL + "/health")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("liveness probe without a certificate: %v %v", resp, err)
	}
}

func TestPrefillSendsKVOnlyToTheDecodeIdentityNamed(t *testing.T) {
	ca := newTestCA(t)
	dec, _ := tlsWorker(t, Decode, ca.creds(certs.RoleDecode, "d0"))
	_, pre := tlsWorker(t, Prefill, ca.creds(certs.RolePrefill, "p0"))
	gw := clientWith(ca.creds(certs.RoleGateway, "gw"))
	kv := dec.Info().KVAddr
	for _, c := range []struct{ name, identity string }{
		{"no identity", ""},
		{"another decode worker's identity", "spiffe://bulkhead/decode/d1"},
		{"a prefill identity", "spiffe://bulkhead/prefill/p0"},
	} {
		b, _ := json.Marshal(PrefillRequest{TransferID: 5, Nonce: 5, DecodeKV: kv, DecodeIdentity: c.identity,
			Request: engine.Request{Tenant: "alpha", Prompt: []int32{1, 2, 3, 4}, MaxTokens: 1}})
		resp, err := gw.Post(pre.URL+"/v1/worker/prefill", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("%s: prefill answered 200 (%s)", c.name, msg)
		}
		if c.identity == "spiffe://bulkhead/decode/d1" && !strings.Contains(string(msg), "d1") {
			t.Errorf("%s: refusal does not name the identity wanted: %s", c.name, msg)
		}
	}
	if st := dec.eng.Stats(); st.PagesFree+st.PagesCached != st.PagesTotal {
		t.Errorf("decode pages in use after refused transfers: %+v", st)
	}
}

func TestWorkerWithoutCredentialsListensOnLoopbackOnly(t *testing.T) {
	for _, a := range []string{"127.0.0.1:9001", "[::1]:9001", "localhost:1"} {
		if err := CheckListen(nil, a); err != nil {
			t.Errorf("%s: %v", a, err)
		}
	}
	for _, a := range []string{"0.0.0.0:9001", ":9001", "10.1.2.3:9001"} {
		if err := CheckListen(nil, "127.0.0.1:1", a); !errors.Is(err, ErrInsecureListen) || !strings.Contains(err.Error(), a) {
			t.Errorf("%s: err %v, want ErrInsecureListen naming the address", a, err)
		}
	}
	if err := CheckListen(&certs.Credentials{}, "0.0.0.0:9001"); err != nil {
		t.Errorf("with credentials: %v", err)
	}
}
