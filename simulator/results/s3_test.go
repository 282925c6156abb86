package results_test

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/rushline/rushline/internal/testutil"
	"github.com/rushline/rushline/simulator/results"
)

// MustS3 starts moto_server, an S3-compatible service, on a free port with
// an empty bucket, points the S3 environment at it and returns the bucket.
func MustS3(t *testing.T) string {
	t.Helper()
	moto, err := exec.LookPath("moto_server")
	if err != nil {
		t.Fatal("moto_server not on PATH: pip install 'moto[server]'")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(moto, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	endpoint := "127.0.0.1:" + strconv.Itoa(port)
	t.Setenv("RUSHLINE_S3_ENDPOINT", endpoint)
	t.Setenv("RUSHLINE_S3_INSECURE", "1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	cl, err := minio.New(endpoint, &minio.Options{Creds: credentials.NewStaticV4("test", "test", ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, "moto_server answers", func() bool {
		return cl.MakeBucket(context.Background(), "results", minio.MakeBucketOptions{Region: "us-east-1"}) == nil
	})
	return "results"
}

// Shards stored in an S3-compatible bucket merge back, and a failed shard
// is named.
func TestS3RoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an S3-compatible server")
	}
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
