package main

import "io"

func runWorker(args []string, stdout, stderr io.Writer) error {
	return errNotYet("worker")
}
