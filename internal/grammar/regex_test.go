package grammar

import (
	"regexp"
	"testing"
)

// TestRegexAgreesWithGo checks the compiled grammar against Go's regexp
// (anchored) on each pattern's strings.
func TestRegexAgreesWithGo(t *testing.T) {
	inputs := []string{"", "a", "ab", "abc", "aab", "2024-01-31", "x_1", "é", "a.b", "a\nb", " ", "foo|bar", "-", "]", "abab", "123"}
	for _, re := range []string{
		`a`, `ab|c`, `a*b?`, `[a-c]+`, `[^a]`, `\d{4}-\d{2}-\d{2}`, `\w+`, `(ab)+`, `(?:a|b){1,2}c?`,
		`.`, `a\.b`, `[\]\-]`, `\s`, `\D+`, `é`, `^abc$`, `a{2,}b`, `[a-z_]\w*`, `a+?`,
	} {
		g, err := CompileRegex(re)
		if err != nil {
			t.Fatalf("%q: %v", re, err)
		}
		gr := regexp.MustCompile(`^(?:` + re + `)$`)
		for _, in := range inputs {
			if got, want := g.Match([]byte(in)), gr.MatchString(in); got != want {
				t.Errorf("%q on %q: grammar %v, regexp %v", re, in, got, want)
			}
		}
	}
	for _, bad := range []string{`(a`, `a**`, `*a`, `\1`, `(?=a)`, `[a`, `a{2`, `a^b`} {
		if _, err := CompileRegex(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
