// Package admin is the operator's HTTP listener, apart from tenant traffic:
// /metrics (whose labels name tenants and their exact token counts) and any
// debug or page-map endpoint live here, on a loopback address by default,
// so a tenant who can reach the API cannot read another tenant's usage.
// Other packages mount their handlers with Handle before Start.
package admin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// DefaultAddr is where the admin listener binds unless told otherwise.
const DefaultAddr = "127.0.0.1:9464"

// Server is the admin listener.
type Server struct {
	addr string
	mux  *http.ServeMux

	mu       sync.Mutex
	patterns []string
	hs       *http.Server
	bound    string
}

// New returns an admin server for addr; nothing listens until Start.
func New(addr string) *Server {
	return &Server{addr: addr, mux: http.NewServeMux()}
}

// Handle mounts h at pattern (http.ServeMux syntax).
func (s *Server) Handle(pattern string, h http.Handler) {
	s.mu.Lock()
	s.patterns = append(s.patterns, pattern)
	s.mu.Unlock()
	s.mux.Handle(pattern, h)
}

// Loopback reports whether addr binds a loopback interface only.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Start listens and serves in the background; it returns the bound address.
func (s *Server) Start() (string, error) {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return "", fmt.Errorf("admin: listen %s: %w", s.addr, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hs = &http.Server{Handler: s.index(), ReadHeaderTimeout: 10 * time.Second}
	s.bound = ln.Addr().String()
	go s.hs.Serve(ln)
	return s.bound, nil
}

// index answers / with the mounted endpoints and everything else through
// the mux.
func (s *Server) index() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			s.mu.Lock()
			ps := append([]string(nil), s.patterns...)
			s.mu.Unlock()
			sort.Strings(ps)
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprintf(w, "bulkhead admin endpoints:\n  %s\n", strings.Join(ps, "\n  "))
			return
		}
		s.mux.ServeHTTP(w, r)
	})
}

// Addr is the bound address ("" before Start).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bound
}

// Close stops the listener.
func (s *Server) Close() error {
	s.mu.Lock()
	hs := s.hs
	s.mu.Unlock()
	if hs == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return hs.Close()
	}
	return nil
}
