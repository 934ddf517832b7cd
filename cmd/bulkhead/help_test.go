package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestEveryCommandAnswersHelp runs "bulkhead COMMAND --help" (and the
// bench subcommands') and expects exit 0 with a usage text on stdout or
// stderr naming the command: --help must never be read as bad input.
func TestEveryCommandAnswersHelp(t *testing.T) {
	var cases [][]string
	for _, c := range commands {
		cases = append(cases, []string{c.name, "--help"}, []string{c.name, "-h"})
	}
	cases = append(cases, []string{"bench", "kernels", "-h"}, []string{"bench", "serve", "-h"}, []string{"--help"})
	for _, args := range cases {
		t.Run(strings.Join(args, "_"), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(args, &out, &errOut)
			text := out.String() + errOut.String()
			if code != 0 {
				t.Fatalf("bulkhead %s: exit %d, want 0; output:\n%s", strings.Join(args, " "), code, text)
			}
			if !strings.Contains(text, "usage: bulkhead") {
				t.Fatalf("bulkhead %s printed no usage line:\n%s", strings.Join(args, " "), text)
			}
		})
	}
}
