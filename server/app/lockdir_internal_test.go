package app

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRecoverRefusesBusyDataDir: recover with the private redis-server must
// not start a second redis-server on a data dir a running server holds.
func TestRecoverRefusesBusyDataDir(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockDir(filepath.Join(dir, "redis"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Recover(t.Context(), Config{DataDir: dir}, "ev", false)
	if err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("recover on a held data dir: %v, want it refused as in use", err)
	}
	unlock()
	unlock, err = lockDir(filepath.Join(dir, "redis"))
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	unlock()
}
