package api

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
)

// MetricsHandler serves the server's Prometheus series. It is not routed
// on the tenant API: its labels name tenants and their exact token counts
// and latencies, which one tenant must not read of another (DESIGN I9).
// Mount it on the admin listener (internal/admin).
func (s *Server) MetricsHandler() http.Handler { return s.metrics.handler() }

// MetricsGatherer is the registry MetricsHandler serves, so the admin
// listener can merge it with the vLLM-compatible series (internal/podmetrics)
// into one exposition.
func (s *Server) MetricsGatherer() prometheus.Gatherer { return s.metrics.reg }
