package main

import "io"

func runInspect(args []string, stdout, stderr io.Writer) error {
	return errNotYet("inspect")
}
