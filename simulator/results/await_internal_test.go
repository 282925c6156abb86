package results

import (
	"context"
	"strings"
	"testing"
	"time"
)

// lateStore is a Dir whose second shard appears after the first listing.
type lateStore struct {
	Dir
	lists int
}

func (l *lateStore) List(ctx context.Context, prefix string) ([]string, error) {
	out, err := l.Dir.List(ctx, prefix)
	l.lists++
	if l.lists == 1 {
		err2 := l.Put(ctx, prefix+"/"+ShardFile(2, 2, false), strings.NewReader("{}"), 2)
		if err == nil {
			err = err2
		}
	}
	return out, err
}

// A merge started before every shard finished looks again until none is
// missing; without a wait it names the missing one at once.
func TestAwaitMissingShards(t *testing.T) {
	defer func(d time.Duration) { pollEvery = d }(pollEvery)
	pollEvery = 10 * time.Millisecond
	ctx := context.Background()
	st := &lateStore{Dir: Dir(t.TempDir())}
	if err := st.Put(ctx, "run/"+ShardFile(1, 2, false), strings.NewReader("{}"), 2); err != nil {
		t.Fatal(err)
	}
	sh, err := await(ctx, st, "", "run", 0)
	if err != nil || len(sh.Missing) != 1 || sh.Missing[0] != 2 {
		t.Fatalf("no wait: %+v, %v; want shard 2 missing", sh, err)
	}
	st.lists = 0
	if err := st.Dir.Put(ctx, "run2/"+ShardFile(1, 2, false), strings.NewReader("{}"), 2); err != nil {
		t.Fatal(err)
	}
	sh, err = await(ctx, st, "", "run2", time.Minute)
	if err != nil || len(sh.Missing) != 0 || !sh.Complete() || st.lists < 2 {
		t.Fatalf("waiting: %+v, %v after %d listings; want both shards", sh, err, st.lists)
	}
}
