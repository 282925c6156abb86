// Package simtest holds the test helpers the simulator's packages share.
package simtest

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/rushline/rushline/server/app"
	"github.com/rushline/rushline/server/auth"
	"github.com/rushline/rushline/server/redisproc/redistest"
)

// Keys are the keys of the servers MustServer starts.
var Keys = auth.Keys{Admin: "admin-key", Simulator: "sim-key", Service: "service-key", JWTSecret: "jwt-secret"}

// MustServer starts a rushline server with Keys on a private real Redis and
// a SQLite database under tb.TempDir, and returns its base URL. It stops at
// the end of the test.
func MustServer(tb testing.TB) string {
	tb.Helper()
	base, _ := MustServerData(tb)
	return base
}

// MustServerData is MustServer that also returns the server's data folder
// (its SQLite audit database).
func MustServerData(tb testing.TB) (base, dataDir string) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	dataDir = tb.TempDir()
	srv, err := app.Start(ctx, app.Config{Addr: "127.0.0.1:0", RedisURL: "redis://" + redistest.MustStart(tb).Addr(),
		DataDir: dataDir, Keys: Keys, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cancel(); _ = srv.Wait() })
	return "http://" + srv.Addr, dataDir
}
