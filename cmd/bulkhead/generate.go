package main

import "io"

func runGenerate(args []string, stdout, stderr io.Writer) error {
	return errNotYet("generate")
}
