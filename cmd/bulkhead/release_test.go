package main

import (
	"os/exec"
	"strings"
	"testing"
)

// reproductionSymbol marks what linking internal/leakrepro brings into a
// binary: its package and its policy type's methods.
const reproductionSymbol = "internal/leakrepro."

// TestReleaseBinaryHoldsNoReproductionCode builds the release binary and the
// leakrepro one and reads their symbol tables: the release binary must hold
// no symbol of the incident reproduction (the checks ask incident.Active(),
// which only the tagged build replaces), and the leakrepro binary must, or
// the first half would prove nothing.
func TestReleaseBinaryHoldsNoReproductionCode(t *testing.T) {
	for _, c := range []struct {
		tags string
		want bool
	}{{"", false}, {"leakrepro", true}} {
		out, err := exec.Command("go", "tool", "nm", binary(t, c.tags)).Output()
		if err != nil {
			t.Fatalf("go tool nm (tags %q): %v", c.tags, err)
		}
		var hits []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, reproductionSymbol) {
				hits = append(hits, strings.TrimSpace(l))
			}
		}
		switch {
		case c.want && len(hits) == 0:
			t.Fatalf("leakrepro binary holds no %q symbol: the check below cannot fail", reproductionSymbol)
		case !c.want && len(hits) > 0:
			t.Fatalf("release binary holds %d reproduction symbols, e.g. %s", len(hits), hits[0])
		case c.want:
			found := false
			for _, h := range hits {
				found = found || strings.Contains(h, "reproduction).SkipWrittenCheck")
			}
			if !found {
				t.Fatalf("leakrepro binary lacks the policy's SkipWrittenCheck method; symbols %v", hits)
			}
		}
	}
}
