package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
)

// TestJoinBodyMatchesDecode: whatever the join body scanner takes, strict
// encoding/json (unknown fields refused) takes too, with the same values;
// what it leaves goes to decode, so answers never depend on which read it.
func TestJoinBodyMatchesDecode(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		fast bool // the scanner takes it
	}{
		{"actual", `{"user_type":"ACTUAL"}`, true},
		{"spaced", " {\n \"user_type\" : \"ACTUAL\" ,\t\"priority\":null } ", true},
		{"virtual bot", `{"user_type":"VIRTUAL","bot_id":"b-1.x","priority":true}`, true},
		{"code", `{"user_type":"ACTUAL","priority_code":"VIP_1"}`, true},
		{"false", `{"user_type":"VIRTUAL","priority":false}`, true},
		{"other type", `{"user_type":"ROBOT"}`, true},
		{"empty", `{}`, true},
		{"twice: the last wins", `{"user_type":"VIRTUAL","user_type":"ACTUAL"}`, true},
		{"null type", `{"user_type":null}`, true},
		{"unknown field", `{"user_type":"ACTUAL","x":1}`, false},
		{"other case", `{"USER_TYPE":"ACTUAL"}`, false},
		{"escape", `{"user_type":"ACT\u0055AL"}`, false},
		{"non-ASCII", `{"user_type":"ACTUÄL"}`, false},
		{"number", `{"priority":1}`, false},
		{"string priority", `{"priority":"true"}`, false},
		{"bool type", `{"user_type":true}`, false},
		{"trailing comma", `{"user_type":"ACTUAL",}`, false},
		{"two objects", `{"user_type":"ACTUAL"}{}`, false},
		{"array", `[]`, false},
		{"unterminated", `{"user_type":"ACTUAL"`, false},
		{"nested", `{"user_type":{"a":"b"}}`, false},
		{"truncated literal", `{"priority":tru}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fast joinRequest
			b := bytes.TrimSpace([]byte(tc.body))
			if got := scanJoin(b, &fast); got != tc.fast {
				t.Fatalf("scanJoin took it: %v, want %v", got, tc.fast)
			}
			if !tc.fast {
				return
			}
			var slow joinRequest
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&slow); err != nil || dec.More() {
				t.Fatalf("encoding/json refuses what the scanner took: %v", err)
			}
			if show(fast) != show(slow) {
				t.Errorf("scanner read %s, encoding/json %s", show(fast), show(slow))
			}
		})
	}
}

// show prints a join request's values, nil as <nil>.
func show(r joinRequest) string {
	s := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return *p
	}
	b := "<nil>"
	if r.Priority != nil {
		b = fmt.Sprint(*r.Priority)
	}
	return fmt.Sprintf("type=%s bot=%s code=%s priority=%s", s(r.UserType), s(r.BotID), s(r.PriorityCode), b)
}
