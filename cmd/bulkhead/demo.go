package main

import "io"

func runDemo(args []string, stdout, stderr io.Writer) error {
	return errNotYet("demo")
}
