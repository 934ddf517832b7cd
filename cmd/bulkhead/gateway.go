package main

import "io"

func runGateway(args []string, stdout, stderr io.Writer) error {
	return errNotYet("gateway")
}
