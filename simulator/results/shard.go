package results

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"time"

	"github.com/rushline/rushline/internal/ctxsleep"
	"github.com/rushline/rushline/simulator/report"
)

// ParseShard reads a --shard value: "" (no shard), "I/N", or "auto", which
// takes I from JOB_COMPLETION_INDEX (0-based, as a Kubernetes Indexed Job
// sets it) and N from count.
func ParseShard(spec string, count int, getenv func(string) string) (i, n int, err error) {
	if spec != "auto" {
		return report.ParseShard(spec)
	}
	idx := getenv("JOB_COMPLETION_INDEX")
	k, err := strconv.Atoi(idx)
	if err != nil || k < 0 {
		return 0, 0, fmt.Errorf("auto needs JOB_COMPLETION_INDEX, a whole number from 0 (got %q)", idx)
	}
	if count < 1 || k >= count {
		return 0, 0, fmt.Errorf("auto needs the shard count (--shards or $RUSHLINE_SHARDS) above the index %d (got %d)", k, count)
	}
	return k + 1, count, nil
}

// Sink stores one shard's result. A nil Sink stores nothing.
type Sink struct {
	store      Store
	loc        string
	dir        string
	shard, cnt int
}

// NewSink stores shard i of n (1 of 1 when n is 0) of run under loc.
func NewSink(loc, run string, i, n int) (*Sink, error) {
	if run == "" {
		return nil, errors.New("a run id (--run-id or $RUSHLINE_RUN_ID) names the run's folder")
	}
	if n == 0 {
		i, n = 1, 1
	}
	st, prefix, err := Open(loc)
	if err != nil {
		return nil, err
	}
	return &Sink{store: st, loc: loc, dir: path.Join(prefix, run), shard: i, cnt: n}, nil
}

func (s *Sink) String() string {
	return fmt.Sprintf("%s/%s", s.loc, path.Join(path.Base(s.dir), ShardFile(s.shard, s.cnt, false)))
}

// Done stores the shard's report.
func (s *Sink) Done(ctx context.Context, rep *report.Report) error {
	if s == nil {
		return nil
	}
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		return err
	}
	return s.store.Put(ctx, path.Join(s.dir, ShardFile(s.shard, s.cnt, false)), &b, int64(b.Len()))
}

// Failed stores why the shard failed, so a merge names it, and returns
// cause (joined with any error storing it).
func (s *Sink) Failed(ctx context.Context, cause error) error {
	if s == nil || cause == nil {
		return cause
	}
	msg := []byte(cause.Error() + "\n")
	err := s.store.Put(context.WithoutCancel(ctx), path.Join(s.dir, ShardFile(s.shard, s.cnt, true)), bytes.NewReader(msg), int64(len(msg)))
	return errors.Join(cause, err)
}

// Collect reads every shard of the run at locRun ("LOCATION/RUN"), first
// waiting up to wait for shards still missing (a merge Job started with the
// shards'). Missing or failed shards are an error naming them, unless
// partial: then problem names them and the rest are returned.
func Collect(ctx context.Context, locRun string, wait time.Duration, partial bool) (reps []*report.Report, problem string, err error) {
	loc, run, err := Split(locRun)
	if err != nil {
		return nil, "", err
	}
	st, prefix, err := Open(loc)
	if err != nil {
		return nil, "", err
	}
	sh, err := await(ctx, st, prefix, run, wait)
	if err != nil {
		return nil, "", err
	}
	if problem = sh.Problem(ctx, st); problem != "" && !partial {
		return nil, "", fmt.Errorf("results: %s: %s (--partial merges the rest)", locRun, problem)
	}
	for i := 1; i <= sh.N; i++ {
		name, ok := sh.Done[i]
		if !ok {
			continue
		}
		rc, err := st.Get(ctx, name)
		if err != nil {
			return nil, "", err
		}
		r, err := report.Read(rc)
		rc.Close()
		if err != nil {
			return nil, "", fmt.Errorf("results: %s: %w", name, err)
		}
		reps = append(reps, r)
	}
	return reps, problem, nil
}

// pollEvery is how often a merge looks again for missing shards (a
// variable for the tests).
var pollEvery = 2 * time.Second

// await finds run's shards, looking again until none is missing or wait
// has passed.
func await(ctx context.Context, st Store, prefix, run string, wait time.Duration) (*Shards, error) {
	deadline := time.Now().Add(wait)
	for {
		sh, err := Find(ctx, st, prefix, run)
		if err == nil && len(sh.Missing) == 0 || time.Now().Add(pollEvery).After(deadline) {
			return sh, err
		}
		if !ctxsleep.Until(ctx, time.Now().Add(pollEvery)) {
			return nil, ctx.Err()
		}
	}
}

// StoreMerged stores the merged report beside the shards of the run at
// locRun, as report.json and report.html.
func StoreMerged(ctx context.Context, locRun string, rep *report.Report) error {
	loc, run, err := Split(locRun)
	if err != nil {
		return err
	}
	st, prefix, err := Open(loc)
	if err != nil {
		return err
	}
	for name, write := range map[string]func(w *bytes.Buffer) error{
		"report.json": func(w *bytes.Buffer) error { return rep.WriteJSON(w) },
		"report.html": func(w *bytes.Buffer) error { return rep.WriteHTML(w) },
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			return err
		}
		if err := st.Put(ctx, path.Join(prefix, run, name), &b, int64(b.Len())); err != nil {
			return err
		}
	}
	return nil
}
