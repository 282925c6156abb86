package redisproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultCLI is the redis-cli executable StartCluster looks up on PATH.
const DefaultCLI = "redis-cli"

// Cluster is a Redis Cluster of masters without replicas, each a Process.
// Its methods are safe for concurrent use.
type Cluster struct {
	nodes []*Process
}

// StartCluster starts masters (at least 3) redis-server nodes with cluster
// mode on, on free loopback ports, joins them with redis-cli --cluster create,
// and waits until every node reports cluster_state:ok. Node i keeps its data
// in dir/node-i (a temporary dir if dir is empty). It is bounded like Start;
// on failure every node it started is stopped.
func StartCluster(ctx context.Context, dir string, masters int) (*Cluster, error) {
	if masters < 3 {
		return nil, fmt.Errorf("redisproc: cluster needs at least 3 masters, got %d", masters)
	}
	cli, err := exec.LookPath(DefaultCLI)
	if err != nil {
		return nil, fmt.Errorf("redisproc: find %s: %w", DefaultCLI, err)
	}
	ctx, cancel := withDefaultTimeout(ctx, DefaultStartTimeout)
	defer cancel()

	c := &Cluster{}
	fail := func(err error) (*Cluster, error) {
		_ = c.Stop()
		return nil, err
	}
	for i := range masters {
		o := Options{Args: []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"}}
		if dir != "" {
			o.Dir = filepath.Join(dir, "node-"+strconv.Itoa(i))
		}
		p, err := Start(ctx, o)
		if err != nil {
			return fail(fmt.Errorf("redisproc: cluster node %d: %w", i, err))
		}
		c.nodes = append(c.nodes, p)
	}

	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	cmd := exec.CommandContext(ctx, cli, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = sysProcAttr()
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil || !strings.Contains(out.String(), "All 16384 slots covered") {
		if err == nil {
			err = errors.New("slots not covered")
		}
		return fail(fmt.Errorf("redisproc: %s --cluster create: %w\n%s", DefaultCLI, err, lastLines(out.String(), tailLines)))
	}
	if err := c.waitOK(ctx); err != nil {
		return fail(err)
	}
	return c, nil
}

// Addrs returns the nodes' "127.0.0.1:port" addresses. It is safe for
// concurrent use.
func (c *Cluster) Addrs() []string {
	a := make([]string, len(c.nodes))
	for i, p := range c.nodes {
		a[i] = p.Addr()
	}
	return a
}

// Nodes returns the nodes, in the order of Addrs, so tests can Kill or
// Restart one. It is safe for concurrent use.
func (c *Cluster) Nodes() []*Process {
	return append([]*Process(nil), c.nodes...)
}

// Stop stops every node. It is idempotent and safe for concurrent use.
func (c *Cluster) Stop() error {
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, p := range c.nodes {
		wg.Go(func() { errs[i] = p.Stop() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// waitOK polls CLUSTER INFO on every node until all say cluster_state:ok and
// know every other node.
func (c *Cluster) waitOK(ctx context.Context) error {
	want := strconv.Itoa(len(c.nodes))
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var last error
		for _, p := range c.nodes {
			if last = clusterOK(ctx, p.Addr(), want); last != nil {
				break
			}
		}
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redisproc: cluster not ok: %w (last: %v)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

func clusterOK(ctx context.Context, addr, knownNodes string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	cn, err := dial(ctx, addr)
	if err != nil {
		return err
	}
	defer cn.Close()
	info, err := cn.do("CLUSTER", "INFO")
	if err != nil {
		return fmt.Errorf("%s: %w", addr, err)
	}
	if s := infoField(info, "cluster_state"); s != "ok" {
		return fmt.Errorf("%s: cluster_state:%s", addr, s)
	}
	if n := infoField(info, "cluster_known_nodes"); n != knownNodes {
		return fmt.Errorf("%s: cluster_known_nodes:%s, want %s", addr, n, knownNodes)
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
