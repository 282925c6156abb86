package auth

import (
	"encoding/json"
	"testing"
)

func TestAppendJSONString(t *testing.T) {
	cases := []struct {
		name string
		in   string
	}{
		{"plain", "u_ABC123"},                 // nothing to escape
		{"quote and backslash", `a"b\c`},      // JSON's two escapes
		{"control characters", "a\x00b\nc\t"}, // below 0x20
		{"unicode", "é☃😀"},                    // multi-byte runes pass through
		{"virtual id", "VIRTUAL:bot-1.a_b"},   // the ids passes carry
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			if err := json.Unmarshal(appendJSONString(nil, tc.in), &got); err != nil || got != tc.in {
				t.Fatalf("round trip of %q: %q, %v", tc.in, got, err)
			}
		})
	}
	var got string
	if err := json.Unmarshal(appendJSONString(nil, "bad\xffbyte"), &got); err != nil || got != "bad\uFFFDbyte" {
		t.Fatalf("invalid UTF-8: %q, %v", got, err)
	}
}
