package audit

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestDiscoverContext(t *testing.T) {
	tests := []struct {
		name    string
		models  string
		props   string // empty: no /props endpoint
		model   string
		wantCtx int
		wantSrc string
		wantErr error
	}{
		{"vLLM max_model_len", `{"data":[{"id":"m","max_model_len":4096}]}`, "", "", 4096, "/v1/models", nil},
		{"chosen among several models", `{"data":[{"id":"a","max_model_len":1},{"id":"b","max_model_len":2048}]}`, "", "b", 2048, "/v1/models", nil},
		{"llama.cpp /props", `{"data":[{"id":"m"}]}`, `{"default_generation_settings":{"n_ctx":8192}}`, "", 8192, "/props", nil},
		{"several models and no choice", `{"data":[{"id":"a"},{"id":"b"}]}`, "", "", 0, "", ErrConfig},
		{"model not listed", `{"data":[{"id":"a","max_model_len":5}]}`, "", "zzz", 0, "", ErrConfig},
		{"no context anywhere", `{"data":[{"id":"m"}]}`, "", "", 0, "", ErrConfig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(tc.models)) })
			if tc.props != "" {
				mux.HandleFunc("GET /props", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(tc.props)) })
			}
			srv := httptest.NewServer(mux)
			defer srv.Close()
			c := &client{base: srv.URL, model: tc.model, http: srv.Client(), timeout: 5 * time.Second}
			n, src, err := c.discover(context.Background(), "")
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil || n != tc.wantCtx || src != tc.wantSrc {
				t.Fatalf("got %d from %q (err %v), want %d from %q", n, src, err, tc.wantCtx, tc.wantSrc)
			}
		})
	}
}

func TestConfigValidateNormalisesURLAndTenants(t *testing.T) {
	c := Config{BaseURL: "http://h:8000/v1/", Style: StyleNatural, APIKeys: []string{"k"}, Concurrency: 3}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.BaseURL != "http://h:8000" {
		t.Errorf("BaseURL %q, want the /v1 suffix removed", c.BaseURL)
	}
	if keys := c.tenantKeys(); len(keys) != 3 || keys[0] != "k" || keys[2] != "k" {
		t.Errorf("one key, concurrency 3: tenant keys %q, want three sessions of k", keys)
	}
	c.APIKeys = []string{"a", "b"}
	if keys := c.tenantKeys(); len(keys) != 2 || keys[1] != "b" {
		t.Errorf("two keys: tenant keys %q, want one tenant per key", keys)
	}
	bad := Config{BaseURL: "h:8000", Style: StyleNatural}
	if err := bad.Validate(); !errors.Is(err, ErrConfig) {
		t.Errorf("URL without a scheme: %v, want ErrConfig", err)
	}
}
