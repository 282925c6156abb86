package queue_test

import (
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc/redistest"
)

// Admissions reads at most AdmissionsMaxChunks chunks: an admission older
// than the newest chunks' records is not found.
func TestAdmissionsScanIsCapped(t *testing.T) {
	p := redistest.MustStart(t)
	rdb := redistest.MustClient(t, p.Addr())
	eng := queue.New(rdb, []byte("k"))
	ctx := t.Context()
	const chunk = 512
	padding := queue.AdmissionsMaxChunks * chunk
	for _, tc := range []struct {
		name  string
		pad   int // joined records between the two admissions
		found []string
	}{
		{"old admission within the cap", padding - chunk, []string{"new", "old"}},
		{"old admission beyond the cap", padding, []string{"new"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stream := queue.StreamKey("ev-" + tc.name)
			pipe := rdb.Pipeline()
			add := func(kind, user string) {
				pipe.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: []any{"k", kind, "u", user, "q", "1"}})
			}
			add(string(queue.RecordAdmitted), "old")
			for range tc.pad {
				add(string(queue.RecordJoined), "pad")
			}
			add(string(queue.RecordAdmitted), "new")
			for range 10 {
				add(string(queue.RecordJoined), "pad")
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			recs, err := eng.Admissions(ctx, "ev-"+tc.name, 5)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range recs {
				got = append(got, r.UserID)
			}
			if !slices.Equal(got, tc.found) {
				t.Errorf("admissions %v, want %v", got, tc.found)
			}
		})
	}
}
