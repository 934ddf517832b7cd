package main

import "flag"

// lenient is --lenient of serve and gateway: unknown request fields become
// a logged warning and an X-Bulkhead-Ignored-Fields response header instead
// of a 400 (api.Config.Lenient). Unsupported values of known fields are
// refused either way.
var lenient bool

func registerLenient(fs *flag.FlagSet) {
	fs.BoolVar(&lenient, "lenient", false, "accept unknown request fields with a logged warning and a response header instead of a 400")
}
