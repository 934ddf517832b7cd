package main

import "io"

func runMkmodel(args []string, stdout, stderr io.Writer) error {
	return errNotYet("mkmodel")
}
