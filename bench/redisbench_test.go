package bench

import "testing"

func TestParseRedisBenchmarkCSV(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      RedisBenchmark
		err       bool
	}{
		// redis-benchmark 7.0 --csv
		{name: "csv", out: "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n" +
			"\"ZRANK bench:big m:__rand_int__\",\"36363.64\",\"0.127\",\"0.032\",\"0.119\",\"0.223\",\"0.327\",\"1.279\"\n",
			want: RedisBenchmark{Name: "ZRANK bench:big m:__rand_int__", RPS: 36363.64, P50: 0.119, P99: 0.327}},
		// an older redis-benchmark without percentiles
		{name: "no p99", out: "\"test\",\"rps\"\n\"ZADD\",\"1000\"\n", err: true},
		// nothing measured
		{name: "empty", out: "", err: true},
		// a run too short to time: no +Inf may reach the result's JSON
		{name: "inf", out: "\"test\",\"rps\",\"p50_latency_ms\",\"p99_latency_ms\"\n\"ZADD\",\"inf\",\"0.1\",\"0.2\"\n", err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseRedisBenchmarkCSV([]byte(tc.out))
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if !tc.err && got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
