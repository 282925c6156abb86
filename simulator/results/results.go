// Package results keeps the shards' results of a distributed run where a
// merge can find them: a folder (a shared volume) or an S3-compatible
// bucket. Each shard writes one file named after its shard, so a merge knows
// which shards are there, which failed and which are missing.
package results

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Store holds the files of runs: names are slash-separated, "<run>/<file>".
type Store interface {
	Put(ctx context.Context, name string, r io.Reader, size int64) error
	Get(ctx context.Context, name string) (io.ReadCloser, error)
	// List names the files under prefix ("<run>/").
	List(ctx context.Context, prefix string) ([]string, error)
}

// Open opens a location: "s3://bucket[/prefix]" (see S3Config for the
// environment it reads) or a folder.
func Open(loc string) (Store, string, error) {
	if rest, ok := strings.CutPrefix(loc, "s3://"); ok {
		bucket, prefix, _ := strings.Cut(rest, "/")
		if bucket == "" {
			return nil, "", fmt.Errorf("results: %q names no bucket", loc)
		}
		s, err := NewS3(S3FromEnv(), bucket)
		return s, strings.Trim(prefix, "/"), err
	}
	return Dir(loc), "", nil
}

// Split cuts "LOCATION/RUN" into the location and the run's name (its last
// element).
func Split(locRun string) (loc, run string, err error) {
	locRun = strings.TrimRight(locRun, "/")
	i := strings.LastIndex(locRun, "/")
	if i < 0 || i == len(locRun)-1 || strings.HasSuffix(locRun[:i], ":/") {
		return "", "", fmt.Errorf("results: %q: want LOCATION/RUN (a folder or s3://bucket, then the run's name)", locRun)
	}
	return locRun[:i], locRun[i+1:], nil
}

// Dir is a Store in a folder.
type Dir string

func (d Dir) path(name string) string { return filepath.Join(string(d), filepath.FromSlash(name)) }

// Put writes name atomically (a temporary file, then a rename), so a merge
// never reads half a shard.
func (d Dir) Put(_ context.Context, name string, r io.Reader, _ int64) error {
	p := d.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".part-*")
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// Get opens name.
func (d Dir) Get(_ context.Context, name string) (io.ReadCloser, error) { return os.Open(d.path(name)) }

// List names the files under prefix (one folder level).
func (d Dir) List(_ context.Context, prefix string) ([]string, error) {
	ents, err := os.ReadDir(d.path(prefix))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, path.Join(prefix, e.Name()))
		}
	}
	return out, nil
}

// ShardFile names shard i of n's result: "shard-0003-of-0016.json", or
// ".failed" for the error of a shard that could not finish.
func ShardFile(i, n int, failed bool) string {
	ext := ".json"
	if failed {
		ext = ".failed"
	}
	return fmt.Sprintf("shard-%04d-of-%04d%s", i, n, ext)
}

var shardName = regexp.MustCompile(`^shard-(\d+)-of-(\d+)\.(json|failed)$`)

// Shards are what a run's folder holds.
type Shards struct {
	// N is the shard count the files name.
	N int
	// Done maps a shard index to its result file, Failed to its error.
	Done   map[int]string
	Failed map[int]string
	// Missing lists the shards with neither.
	Missing []int
}

// Find lists run's shards in s under prefix.
func Find(ctx context.Context, s Store, prefix, run string) (*Shards, error) {
	dir := path.Join(prefix, run)
	names, err := s.List(ctx, dir)
	if err != nil {
		return nil, err
	}
	sh := &Shards{Done: map[int]string{}, Failed: map[int]string{}}
	for _, name := range names {
		m := shardName.FindStringSubmatch(path.Base(name))
		if m == nil {
			continue
		}
		i, _ := strconv.Atoi(m[1])
		n, _ := strconv.Atoi(m[2])
		if sh.N != 0 && n != sh.N {
			return nil, fmt.Errorf("results: %s holds shards of %d and of %d", dir, sh.N, n)
		}
		sh.N = n
		if m[3] == "failed" {
			sh.Failed[i] = name
		} else {
			sh.Done[i] = name
		}
	}
	if sh.N == 0 {
		return nil, fmt.Errorf("results: no shard results under %s", dir)
	}
	for i := 1; i <= sh.N; i++ {
		if _, ok := sh.Done[i]; !ok {
			if _, failed := sh.Failed[i]; !failed {
				sh.Missing = append(sh.Missing, i)
			}
		}
	}
	return sh, nil
}

// Complete reports whether every shard finished.
func (s *Shards) Complete() bool { return len(s.Done) == s.N }

// Problem describes the shards a merge lacks, "" when none.
func (s *Shards) Problem(ctx context.Context, st Store) string {
	var parts []string
	if len(s.Missing) > 0 {
		parts = append(parts, fmt.Sprintf("missing shard(s) %s of %d", list(s.Missing), s.N))
	}
	failed := make([]int, 0, len(s.Failed))
	for i := range s.Failed {
		if _, done := s.Done[i]; !done {
			failed = append(failed, i)
		}
	}
	slices.Sort(failed)
	for _, i := range failed {
		why := "no reason given"
		if rc, err := st.Get(ctx, s.Failed[i]); err == nil {
			b, _ := io.ReadAll(io.LimitReader(rc, 500))
			rc.Close()
			why = strings.TrimSpace(string(b))
		}
		parts = append(parts, fmt.Sprintf("shard %d of %d failed: %s", i, s.N, why))
	}
	return strings.Join(parts, "; ")
}

func list(is []int) string {
	s := make([]string, len(is))
	for k, i := range is {
		s[k] = strconv.Itoa(i)
	}
	return strings.Join(s, ", ")
}
