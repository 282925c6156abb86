package results

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Config says how to reach an S3-compatible service.
type S3Config struct {
	// Endpoint is host[:port] (e.g. s3.amazonaws.com, minio:9000).
	Endpoint  string
	AccessKey string
	SecretKey string
	Region    string
	// Insecure uses http instead of https.
	Insecure bool
}

// S3FromEnv reads RUSHLINE_S3_ENDPOINT (default s3.amazonaws.com),
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION and
// RUSHLINE_S3_INSECURE=1.
func S3FromEnv() S3Config {
	c := S3Config{Endpoint: os.Getenv("RUSHLINE_S3_ENDPOINT"), AccessKey: os.Getenv("AWS_ACCESS_KEY_ID"),
		SecretKey: os.Getenv("AWS_SECRET_ACCESS_KEY"), Region: os.Getenv("AWS_REGION"),
		Insecure: os.Getenv("RUSHLINE_S3_INSECURE") == "1"}
	if c.Endpoint == "" {
		c.Endpoint = "s3.amazonaws.com"
	}
	return c
}

// S3 is a Store in a bucket.
type S3 struct {
	client *minio.Client
	bucket string
}

// NewS3 opens bucket.
func NewS3(c S3Config, bucket string) (*S3, error) {
	cl, err := minio.New(c.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(c.AccessKey, c.SecretKey, ""),
		Secure: !c.Insecure, Region: c.Region})
	if err != nil {
		return nil, fmt.Errorf("results: s3 %s: %w", c.Endpoint, err)
	}
	return &S3{client: cl, bucket: bucket}, nil
}

// Put uploads name.
func (s *S3) Put(ctx context.Context, name string, r io.Reader, size int64) error {
	_, err := s.client.PutObject(ctx, s.bucket, name, r, size, minio.PutObjectOptions{ContentType: "application/json"})
	if err != nil {
		return fmt.Errorf("results: put s3://%s/%s: %w", s.bucket, name, err)
	}
	return nil
}

// Get downloads name.
func (s *S3) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	o, err := s.client.GetObject(ctx, s.bucket, name, minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("results: get s3://%s/%s: %w", s.bucket, name, err)
	}
	return o, nil
}

// List names the objects under prefix.
func (s *S3) List(ctx context.Context, prefix string) ([]string, error) {
	var out []string
	for o := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: strings.TrimSuffix(prefix, "/") + "/"}) {
		if o.Err != nil {
			return nil, fmt.Errorf("results: list s3://%s/%s: %w", s.bucket, prefix, o.Err)
		}
		out = append(out, o.Key)
	}
	return out, nil
}
