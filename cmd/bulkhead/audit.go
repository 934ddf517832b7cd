package main

import "io"

func runAudit(args []string, stdout, stderr io.Writer) error {
	return errNotYet("audit")
}
