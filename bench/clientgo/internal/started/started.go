// Package started records when the process started, as early as Go allows.
//
// Go (1.21+) initialises, at each step, the first package in import-path
// order whose imports are all initialised. This package imports only "time",
// so it is ready as soon as the runtime and "time" are, and it runs about
// 1 ms after exec (GODEBUG=inittrace=1 shows it), well before client-go's
// and the API types' package initialisation (6–9 ms). What it misses is exec
// and the Go runtime's own start.
package started

import "time"

// At is the time this package was initialised.
var At = time.Now()
