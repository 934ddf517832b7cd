package main

import "io"

func runTokenize(args []string, stdout, stderr io.Writer) error {
	return errNotYet("tokenize")
}
