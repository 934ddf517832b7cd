package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/tenant"
)

// requestInfo is what the middleware knows about one HTTP request; the
// logUser records the request's user and safety_identifier fields on its
// log lines: that is what they are for (tracing abuse back to an end user).
func (i *requestInfo) logUser(user, safetyID string) {
	if user != "" {
		i.log = i.log.With("user", user)
	}
	if safetyID != "" {
		i.log = i.log.With("safety_identifier", safetyID)
	}
}

// handler fills in the tenant and token counts for the final log line.
type requestInfo struct {
	id               string
	start            time.Time
	log              *slog.Logger
	tenant           *tenant.Tenant
	promptTokens     int
	completionTokens int
	releaseBody      func()      // bounds.go: returns the body budget
	kvt              *KVTransfer // admitted kv_transfer_params (kvtransfer.go)
}

// doneWithBody returns the request's share of the body budget, once.
func (i *requestInfo) doneWithBody() {
	if i.releaseBody != nil {
		i.releaseBody()
		i.releaseBody = nil
	}
}

func (i *requestInfo) tenantID() string {
	if i.tenant == nil {
		return ""
	}
	return i.tenant.ID
}

type infoKey struct{}

func withInfo(ctx context.Context, i *requestInfo) context.Context {
	return context.WithValue(ctx, infoKey{}, i)
}

func infoFrom(ctx context.Context) *requestInfo {
	if i, ok := ctx.Value(infoKey{}).(*requestInfo); ok {
		return i
	}
	return &requestInfo{id: newRequestID(), start: time.Now(), log: slog.Default()}
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// statusWriter records the status code and passes Flush through for SSE.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// authed resolves the tenant from the bearer key before the handler runs.
func (s *Server) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		info := infoFrom(r.Context())
		key := bearerKey(r)
		t, err := s.tenants.Authenticate(key)
		if err != nil {
			s.metrics.rejected("", "unauthorized")
			writeError(w, unauthorized())
			return
		}
		info.tenant = t
		info.log = info.log.With("tenant", t.ID)
		h(w, r)
	}
}

func bearerKey(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}
