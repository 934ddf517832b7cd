package api

import "net/http"

// MetricsHandler serves the server's Prometheus series. It is not routed
// on the tenant API: its labels name tenants and their exact token counts
// and latencies, which one tenant must not read of another (DESIGN I9).
// Mount it on the admin listener (internal/admin).
func (s *Server) MetricsHandler() http.Handler { return s.metrics.handler() }
