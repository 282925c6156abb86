package redisproc_test

import (
	"testing"
	"time"

	"github.com/rushline/rushline/server/redisproc"
)

func TestInfoCPU(t *testing.T) {
	for _, tc := range []struct {
		name, info string
		want       time.Duration
		fails      bool
	}{
		{name: "user and system add up", info: "# CPU\r\nused_cpu_sys:1.250000\r\nused_cpu_user:0.500125\r\nused_cpu_sys_children:9.000000\r\n",
			want: 1750125 * time.Microsecond},
		{name: "a field missing", info: "# CPU\r\nused_cpu_sys:1.25\r\n", fails: true},
		{name: "a field not a number", info: "used_cpu_sys:x\r\nused_cpu_user:1\r\n", fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := redisproc.InfoCPU(tc.info)
			if tc.fails {
				if err == nil {
					t.Fatalf("InfoCPU = %v, want an error", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("InfoCPU = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
