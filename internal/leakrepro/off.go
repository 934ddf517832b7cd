//go:build !leakrepro

package leakrepro

// Enabled is false in every normal build.
const Enabled = false
