package api

import "net/http"

// MetricsHandler serves the server's Prometheus series without the request
// log and tenant middleware of ServeHTTP, for in-process readers such as the
// page map, which samples it several times a second.
func (s *Server) MetricsHandler() http.Handler { return s.metrics.handler() }
