package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// contextWithSignals is canceled on the first SIGINT or SIGTERM, so that a
// running agent is stopped and the lease records it.
func contextWithSignals() context.Context {
	ctx, _ := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	return ctx
}
