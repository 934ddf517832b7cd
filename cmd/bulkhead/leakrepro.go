//go:build leakrepro

package main

// The incident reproduction is linked into this binary only with the
// leakrepro tag; importing it installs its policy (see internal/incident).
import _ "github.com/bulkhead-llm/bulkhead/internal/leakrepro"
