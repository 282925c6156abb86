// Package digits writes numbers for people to read in reports.
package digits

import (
	"strconv"
	"strings"
)

// Grouped writes n with its digits in groups of three: 1,234,567.
func Grouped[T ~int | ~int64 | ~uint64](n T) string {
	var s string
	if n < 0 {
		s = strconv.FormatInt(int64(n), 10)
	} else {
		s = strconv.FormatUint(uint64(n), 10)
	}
	digits, neg := strings.CutPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
