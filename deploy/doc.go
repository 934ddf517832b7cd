// Package deploy holds bulkhead's Kubernetes deployment (helm/bulkhead) and
// the test that renders it. It is a module of its own so that Helm and the
// Kubernetes API types stay out of the server's dependency graph.
package deploy
