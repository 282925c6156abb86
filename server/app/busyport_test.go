package app_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rushline/rushline/server/app"
	"github.com/rushline/rushline/server/redisproc/redistest"
)

// TestBusyPortLeavesDataDirUntouched: a second server started on a port
// another holds fails before it makes keys.json, rushline.db or the data
// folder itself.
func TestBusyPortLeavesDataDirUntouched(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for _, tc := range []struct {
		name string
		cfg  app.Config
	}{
		{"given Redis", app.Config{RedisURL: "redis://" + redistest.MustStart(t).Addr()}},
		{"private redis-server", app.Config{Embedded: "redis-server"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Addr, cfg.DataDir = held.Addr().String(), filepath.Join(t.TempDir(), "data")
			cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			srv, err := app.Start(context.Background(), cfg)
			if err == nil {
				_ = srv.Wait()
				t.Fatal("started on a busy port")
			}
			if !strings.Contains(err.Error(), "address already in use") {
				t.Errorf("error %q does not say the address is in use", err)
			}
			if _, err := os.Stat(cfg.DataDir); !errors.Is(err, fs.ErrNotExist) {
				entries, _ := os.ReadDir(cfg.DataDir)
				t.Errorf("the data folder was made (%v): %v", err, entries)
			}
		})
	}
}
