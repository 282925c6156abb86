package redisproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// conn is a minimal RESP2 client for readiness and cluster probes, so that
// probing needs no connection pool, handshake or retries. It is not safe for
// concurrent use.
type conn struct {
	c    net.Conn
	r    *bufio.Reader
	stop func() bool
}

func dial(ctx context.Context, addr string) (*conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	// Unblock a read when ctx ends early, e.g. because the child died and
	// a stranger's listener is holding the reply back.
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	return &conn{c: c, r: bufio.NewReader(c), stop: stop}, nil
}

func (c *conn) Close() error {
	c.stop()
	return c.c.Close()
}

// do sends one command and returns a simple-string, integer or bulk reply as
// a string. Error replies come back as errors.
func (c *conn) do(args ...string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c.c, b.String()); err != nil {
		return "", err
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", errors.New("empty reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", errors.New(line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", fmt.Errorf("bad bulk reply %q", line)
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}

// InfoCPU is the CPU time, user and system, that INFO cpu's reply info says
// the server has used so far.
func InfoCPU(info string) (time.Duration, error) {
	var total float64
	for _, k := range []string{"used_cpu_user", "used_cpu_sys"} {
		v := infoField(info, k)
		if v == "" {
			return 0, fmt.Errorf("redisproc: INFO cpu without %s", k)
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("redisproc: INFO cpu %s: %w", k, err)
		}
		total += f
	}
	return time.Duration(total * float64(time.Second)), nil
}
