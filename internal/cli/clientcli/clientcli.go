// Package clientcli is the API client half of the plantstore command line:
// the plants, webhooks, events and tokens commands, each a client of a
// running server through package client (never the row stores), the
// healthcheck probe, and the output helpers they share with cmd/plantstore
// (TextColumn, WriteJSON). cmd/plantstore embeds Plants, Webhooks, Events,
// Tokens and Healthcheck in its kong model and binds an *Env; their errors
// follow internal/cli/cliexit.
package clientcli

import "io"

// Env is where a command writes: its results on Stdout, what it says about
// them (the next page's flag, an ETag, a summary) on Stderr.
type Env struct {
	Stdout io.Writer
	Stderr io.Writer
}
