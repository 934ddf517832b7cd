//go:build leakrepro

package leakrepro

// Enabled is true only in builds with the leakrepro tag.
const Enabled = true
