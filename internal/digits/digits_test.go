package digits

import "testing"

func TestGrouped(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int64
		want string
	}{
		{"zero", 0, "0"},
		{"three digits", 999, "999"},
		{"four", 1000, "1,000"},
		{"seven", 1_234_567, "1,234,567"},
		{"negative", -12_345, "-12,345"},
		{"negative, three digits", -999, "-999"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Grouped(tc.n); got != tc.want {
				t.Errorf("Grouped(%d) = %q, want %q", tc.n, got, tc.want)
			}
		})
	}
}

func TestGroupedUnsigned(t *testing.T) {
	if got, want := Grouped(uint64(18_446_744_073_709_551_615)), "18,446,744,073,709,551,615"; got != want {
		t.Errorf("Grouped(max uint64) = %q, want %q", got, want)
	}
}
