package results_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/rushline/rushline/simulator/results"
)

// MustS3 serves an S3-compatible bucket (gofakes3 on a real HTTP listener,
// so minio-go speaks the S3 protocol to it), points the S3 environment at it
// and returns the bucket.
func MustS3(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(srv.Close)
	endpoint := strings.TrimPrefix(srv.URL, "http://")
	t.Setenv("RUSHLINE_S3_ENDPOINT", endpoint)
	t.Setenv("RUSHLINE_S3_INSECURE", "1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	cl, err := minio.New(endpoint, &minio.Options{Creds: credentials.NewStaticV4("test", "test", ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.MakeBucket(context.Background(), "results", minio.MakeBucketOptions{Region: "us-east-1"}); err != nil {
		t.Fatal(err)
	}
	return "results"
}

// Shards stored in an S3-compatible bucket merge back, and a failed shard
// is named.
func TestS3RoundTrip(t *testing.T) {
	ctx := context.Background()
	loc := "s3://" + MustS3(t) + "/rehearsals"
	for i := 1; i <= 3; i++ {
		s, err := results.NewSink(loc, "run-1", i, 3)
		if err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			_ = s.Failed(ctx, context.DeadlineExceeded)
			continue
		}
		if err := s.Done(ctx, MustShardReport(t, i, 3, 5)); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := results.Collect(ctx, loc+"/run-1", 0, false)
	if err == nil || !strings.Contains(err.Error(), "shard 2 of 3 failed: context deadline exceeded") {
		t.Fatalf("err = %v", err)
	}
	reps, _, err := results.Collect(ctx, loc+"/run-1", 0, true)
	if err != nil || len(reps) != 2 {
		t.Fatalf("partial: %d reports, %v", len(reps), err)
	}
	if err := results.StoreMerged(ctx, loc+"/run-1", reps[0]); err != nil {
		t.Fatal(err)
	}
	st, prefix, err := results.Open(loc)
	if err != nil || prefix != "rehearsals" {
		t.Fatalf("open: %q %v", prefix, err)
	}
	names, err := st.List(ctx, "rehearsals/run-1")
	if err != nil || !strings.Contains(strings.Join(names, " "), "rehearsals/run-1/report.html") {
		t.Fatalf("listing %v, %v", names, err)
	}
}
