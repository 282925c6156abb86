package redisproc

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestStartRetriesTakenPort(t *testing.T) {
	if !Available("") {
		t.Fatal("redis-server not found on PATH; install it with `apt-get install -y redis-server`")
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := busy.Addr().(*net.TCPAddr).Port

	tests := []struct {
		name    string
		taken   int // how often the picker hands out the busy port first
		wantErr bool
	}{
		// The usual case.
		{name: "free at once", taken: 0},
		// The race lost twice, then won.
		{name: "taken twice", taken: 2},
		// Lost every time: give up with the bind error.
		{name: "always taken", taken: portAttempts, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			calls := 0
			pick := func(cluster bool) (int, error) {
				calls++
				if calls <= tt.taken {
					return busyPort, nil
				}
				return freePort(cluster)
			}
			p, err := start(ctx, Options{Dir: t.TempDir()}, pick)
			if tt.wantErr {
				if err == nil {
					p.Stop()
					t.Fatal("start succeeded")
				}
				if !strings.Contains(err.Error(), "Address already in use") {
					t.Errorf("error does not quote the bind failure: %v", err)
				}
				if calls != portAttempts {
					t.Errorf("picked %d ports, want %d", calls, portAttempts)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			if calls != tt.taken+1 {
				t.Errorf("picked %d ports, want %d", calls, tt.taken+1)
			}
			if p.Addr() == busy.Addr().String() {
				t.Errorf("Addr() = the busy port %s", p.Addr())
			}
		})
	}
}

func TestStablePorts(t *testing.T) {
	tests := []struct {
		name      string
		ephemeral string
		lo, hi    int
	}{
		{"Linux's default", "32768\t60999\n", 10768, 22768},
		{"a low range leaves fewer", "13000 60999", 1024, 3000},
		{"too low to leave room", "11500 60999", 0, 0},
		{"not Linux", "", 0, 0},
		{"garbled", "lots of ports", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if lo, hi := stablePorts(tt.ephemeral); lo != tt.lo || hi != tt.hi {
				t.Errorf("stablePorts(%q) = [%d, %d), want [%d, %d)", tt.ephemeral, lo, hi, tt.lo, tt.hi)
			}
		})
	}
}

// TestFreePortBelowEphemeral: picked ports, and their cluster bus ports,
// are free and below the range outgoing connections take theirs from.
func TestFreePortBelowEphemeral(t *testing.T) {
	lo, hi := stablePorts(ephemeralRange())
	if hi == 0 {
		lo, hi = 1, 65536 // no range to keep below: any free port
	}
	for _, cluster := range []bool{false, true} {
		port, err := freePort(cluster)
		if err != nil {
			t.Fatal(err)
		}
		if port < lo || port >= hi {
			t.Errorf("freePort(%v) = %d, want in [%d, %d)", cluster, port, lo, hi)
		}
		ports := []int{port}
		if cluster {
			ports = append(ports, port+10000)
		}
		for _, p := range ports {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				t.Errorf("freePort(%v) gave %d, not free: %v", cluster, p, err)
				continue
			}
			l.Close()
		}
	}
}

func TestTailWriter(t *testing.T) {
	many := strings.Repeat("x\n", tailLines) + "last\n"
	tests := []struct {
		name   string
		writes []string
		want   string
	}{
		// Lines split across writes are joined.
		{name: "split line", writes: []string{"hel", "lo\r\nwor", "ld"}, want: "hello\nworld"},
		// Only the last tailLines lines are kept.
		{name: "overflow", writes: []string{"first\n", many}, want: strings.TrimSuffix(strings.Repeat("x\n", tailLines-1)+"last\n", "\n")},
		// Nothing written.
		{name: "empty", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sink strings.Builder
			w := newTailWriter(&sink)
			for _, s := range tt.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if got := w.String(); got != tt.want {
				t.Errorf("tail = %q, want %q", got, tt.want)
			}
			if got, want := sink.String(), strings.Join(tt.writes, ""); got != want {
				t.Errorf("sink got %q, want %q", got, want)
			}
		})
	}
}
