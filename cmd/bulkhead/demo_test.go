package main

import (
	"bytes"
	"strings"
	"testing"
)

// The README's first command must keep working: the demo runs a whole
// disaggregated deployment and exits 0 only when every check held.
func TestDemoPassesEveryCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three servers; skipped with -short")
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"demo", "--rounds", "2"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	for _, want := range []string{"all 8 checks passed", "0 wrong answers, 0 answers containing the other tenant's words", "512 of 512 pages free"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
	if code := run([]string{"demo", "--rounds", "9"}, &out, &errOut); code != 2 {
		t.Errorf("--rounds 9: exit %d, want 2", code)
	}
}
