//go:build amd64 && !noasm

package kernels

import (
	"os"
	"regexp"
	"testing"
)

// TestDefaultRowStreamsFollowsVendor checks CPUID's vendor against the
// kernel's /proc/cpuinfo and the default it gives: two streams on Intel,
// one elsewhere.
func TestDefaultRowStreamsFollowsVendor(t *testing.T) {
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skipf("no /proc/cpuinfo to compare CPUID with: %v", err)
	}
	m := regexp.MustCompile(`(?m)^vendor_id\s*:\s*(\S+)`).FindSubmatch(info)
	if m == nil {
		t.Skip("/proc/cpuinfo has no vendor_id line")
	}
	v := cpuVendor()
	if v != string(m[1]) {
		t.Fatalf("CPUID vendor %q, /proc/cpuinfo %q", v, m[1])
	}
	want := 1
	if v == "GenuineIntel" {
		want = 2
	}
	if got := defaultRowStreams(); got != want {
		t.Fatalf("defaultRowStreams() = %d on %s, want %d", got, v, want)
	}
	t.Logf("%s: %d weight streams per thread", v, want)
}
