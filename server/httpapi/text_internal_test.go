package httpapi

import (
	"strings"
	"testing"
)

func TestCheckText(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		field      string // "" when the body is text throughout
	}{
		{"plain", `{"name":"Spring concert","seats":5}`, ""},
		{"accents and emoji", `{"name":"Café \ud83c\udfb5 ☕"}`, ""},
		{"escaped quote and slash", `{"name":"a\"b\/c\\d"}`, ""},
		{"a real replacement character", `{"name":"a` + "\uFFFD" + `"}`, ""},
		{"NUL escape", `{"id":"ev","name":"a\u0000b"}`, "field name"},
		{"bell escape", `{"name":"\u0007"}`, "field name"},
		{"newline escape", `{"name":"two\nlines"}`, "field name"},
		{"tab escape", `{"name":"a\tb"}`, "field name"},
		{"raw DEL", "{\"name\":\"a\x7fb\"}", "field name"},
		{"raw C1 control", "{\"name\":\"a\u0085b\"}", "field name"},
		{"escaped C1 control", `{"name":"a\u0085b"}`, "field name"},
		{"invalid UTF-8", "{\"nickname\":\"\xc3(\"}", "field nickname"},
		{"lone high surrogate", `{"nickname":"\ud800"}`, "field nickname"},
		{"lone low surrogate", `{"nickname":"\udc00x"}`, "field nickname"},
		{"high surrogate then a letter", `{"nickname":"\ud800\u0041"}`, "field nickname"},
		{"second array item", `{"user_ids":["u_1","u_\u0000"]}`, "field user_ids[1]"},
		{"after other values", `{"a":1,"b":[true,null,{"c":"ok"}],"d":{"e":"\u0001"}}`, "field d.e"},
		{"keys are not values", `{"n\u00e9":"x","ok":"\u0000"}`, "field ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkText([]byte(tc.body))
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("refused text: %v", err)
			case tc.field != "" && (err == nil || !strings.Contains(err.Error(), tc.field+" must be text")):
				t.Fatalf("err = %v, want one naming %s", err, tc.field)
			}
		})
	}
}
