package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/rushline/rushline/server/app"
)

// TestBindDeviceFlagChecked: an unknown --bind-device mode stops the start
// before anything is opened.
func TestBindDeviceFlagChecked(t *testing.T) {
	dir := t.TempDir()
	_, err := app.Start(context.Background(), app.Config{Addr: "127.0.0.1:0", DataDir: dir, BindDevice: "mac"})
	if err == nil || !strings.Contains(err.Error(), "--bind-device") {
		t.Fatalf("start with --bind-device mac: %v", err)
	}
}
