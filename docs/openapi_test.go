package docs

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// apiMDEnv overrides where the binding contract is read from.
const apiMDEnv = "RUSHLINE_API_MD"

// defaultAPIMD is API.md relative to this directory: CI checks out shared/
// beside the repository (/work/shared next to /work/main).
var defaultAPIMD = filepath.Join("..", "..", "shared", "API.md")

// abbreviated expands API.md's "…/x" shorthands. Each is written out by hand,
// so a new shorthand in API.md fails the test instead of being guessed.
var abbreviated = map[string]string{
	"…/pause":  "/api/v1/admin/events/{event}/pause",
	"…/resume": "/api/v1/admin/events/{event}/resume",
}

var (
	// endpointRe matches a backticked "METHOD /path", e.g. `GET /api/v1/events/{event}`,
	// also when the backticks hold a body after the path.
	endpointRe = regexp.MustCompile("`(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) ([^`\\s]+)")
	// tableRowRe matches an error-table row: | 409 | `SEAT_TAKEN`, `SOLD_OUT` | when |
	tableRowRe = regexp.MustCompile(`^\|\s*([1-5][0-9]{2})\s*\|([^|]*)\|`)
	// codeRe matches a backticked error code.
	codeRe = regexp.MustCompile("`([A-Z][A-Z0-9_]*)`")
	// proseCodeRe matches a status followed by a backticked code anywhere in prose: 403 `FORBIDDEN`.
	proseCodeRe = regexp.MustCompile("\\b([1-5][0-9]{2})\\s+`([A-Z][A-Z0-9_]*)`")
	// pathParamRe matches a path template parameter.
	pathParamRe = regexp.MustCompile(`\{([^{}]+)\}`)
)

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

type endpoint struct{ method, path string }

func (e endpoint) String() string { return e.method + " " + e.path }

// MustLoadSpec parses the embedded OpenAPI document into plain maps.
func MustLoadSpec(tb testing.TB) map[string]any {
	tb.Helper()
	if len(OpenAPI) == 0 {
		tb.Fatal("docs.OpenAPI is empty: openapi.yaml was not embedded")
	}
	var raw any
	if err := yaml.Unmarshal(OpenAPI, &raw); err != nil {
		tb.Fatalf("openapi.yaml does not parse: %v", err)
	}
	doc, ok := normalize(raw).(map[string]any)
	if !ok {
		tb.Fatalf("openapi.yaml: top level is %T, want a mapping", raw)
	}
	return doc
}

// MustReadAPIMD returns the text of the binding contract, failing (never
// skipping) when it cannot be found.
func MustReadAPIMD(tb testing.TB) string {
	tb.Helper()
	path := defaultAPIMD
	if p := os.Getenv(apiMDEnv); p != "" {
		path = p
	}
	b, err := os.ReadFile(path)
	if err != nil {
		abs, _ := filepath.Abs(path)
		tb.Fatalf("cannot read the API contract at %s (%v).\n"+
			"The OpenAPI document is checked against API.md; check out shared/ next to the "+
			"repository (../../shared/API.md from docs/) or set %s to its path.", abs, err, apiMDEnv)
	}
	return string(b)
}

// normalize turns yaml.v3's map[any]any (non-string keys such as 200) into map[string]any.
func normalize(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = normalize(x)
		}
		return v
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[fmt.Sprint(k)] = normalize(x)
		}
		return m
	case []any:
		for i, x := range v {
			v[i] = normalize(x)
		}
		return v
	default:
		return v
	}
}

// lookup follows a JSON pointer ("#/components/schemas/Error") inside doc.
func lookup(doc map[string]any, ref string) (any, error) {
	if !strings.HasPrefix(ref, "#/") {
		return nil, fmt.Errorf("only local refs are allowed, got %q", ref)
	}
	var cur any = doc
	for _, part := range strings.Split(ref[2:], "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("ref %q: %q is not inside a mapping", ref, part)
		}
		if cur, ok = m[part]; !ok {
			return nil, fmt.Errorf("ref %q: no %q", ref, part)
		}
	}
	return cur, nil
}

// deref follows $ref chains and returns the mapping found.
func deref(tb testing.TB, doc map[string]any, v any) map[string]any {
	tb.Helper()
	for range 32 {
		m, ok := v.(map[string]any)
		if !ok {
			tb.Fatalf("expected a mapping, got %T", v)
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		var err error
		if v, err = lookup(doc, ref); err != nil {
			tb.Fatal(err)
		}
	}
	tb.Fatal("$ref chain too long")
	return nil
}

// mapAt walks keys from node, dereferencing at every step.
func mapAt(tb testing.TB, doc map[string]any, node any, keys ...string) map[string]any {
	tb.Helper()
	m := deref(tb, doc, node)
	for i, k := range keys {
		next, ok := m[k]
		if !ok {
			tb.Fatalf("no %q at %s", k, strings.Join(keys[:i], "."))
		}
		m = deref(tb, doc, next)
	}
	return m
}

// properties merges an object schema's properties, through allOf.
func properties(tb testing.TB, doc map[string]any, schema map[string]any) map[string]any {
	tb.Helper()
	out := map[string]any{}
	if ps, ok := schema["properties"].(map[string]any); ok {
		for k, v := range ps {
			out[k] = v
		}
	}
	if all, ok := schema["allOf"].([]any); ok {
		for _, sub := range all {
			for k, v := range properties(tb, doc, deref(tb, doc, sub)) {
				out[k] = v
			}
		}
	}
	return out
}

func stringList(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

func number(v any) (float64, bool) {
	switch v := v.(type) {
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case uint64:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}

// extractEndpoints finds every backticked "METHOD /path" in md.
func extractEndpoints(md string) ([]endpoint, error) {
	seen := map[endpoint]bool{}
	var out []endpoint
	var errs []string
	for _, m := range endpointRe.FindAllStringSubmatch(md, -1) {
		method, path := m[1], m[2]
		if i := strings.IndexAny(path, "?#"); i >= 0 {
			path = path[:i]
		}
		if strings.HasPrefix(path, "…") || strings.HasPrefix(path, "...") {
			full, ok := abbreviated[strings.Replace(path, "...", "…", 1)]
			if !ok {
				errs = append(errs, fmt.Sprintf("%s %s: abbreviated path with no expansion; add it to abbreviated", method, path))
				continue
			}
			path = full
		}
		if !strings.HasPrefix(path, "/") {
			errs = append(errs, fmt.Sprintf("%s %s: not an absolute path", method, path))
			continue
		}
		e := endpoint{method, path}
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return out, nil
}

// extractErrorTable reads API.md's error table (section "## Errors"): code → HTTP status.
func extractErrorTable(md string) (map[string]int, error) {
	start := strings.Index(md, "\n## Errors")
	if start < 0 {
		return nil, fmt.Errorf(`no "## Errors" section`)
	}
	section := md[start+1:]
	if end := strings.Index(section[2:], "\n## "); end >= 0 {
		section = section[:end+2]
	}
	codes := map[string]int{}
	for _, line := range strings.Split(section, "\n") {
		row := tableRowRe.FindStringSubmatch(strings.TrimSpace(line))
		if row == nil {
			continue
		}
		status, _ := strconv.Atoi(row[1])
		for _, c := range codeRe.FindAllStringSubmatch(row[2], -1) {
			if prev, dup := codes[c[1]]; dup && prev != status {
				return nil, fmt.Errorf("code %s listed under %d and %d", c[1], prev, status)
			}
			codes[c[1]] = status
		}
	}
	if len(codes) == 0 {
		return nil, fmt.Errorf("the error table has no codes")
	}
	return codes, nil
}

func TestExtractEndpoints(t *testing.T) {
	for _, tc := range []struct {
		name string
		md   string
		want []string
		err  bool
	}{
		// plain backticked route
		{name: "plain", md: "`GET /api/v1/events` →", want: []string{"GET /api/v1/events"}},
		// the path ends where the body starts
		{name: "with body", md: "`POST /api/v1/admin/events/{event}/load {\"tps\": n}`",
			want: []string{"POST /api/v1/admin/events/{event}/load"}},
		// shorthand for the admin event routes
		{name: "ellipsis", md: "`POST …/pause` and `POST …/resume`",
			want: []string{"POST /api/v1/admin/events/{event}/pause", "POST /api/v1/admin/events/{event}/resume"}},
		// duplicates count once
		{name: "dedup", md: "`GET /healthz`, again `GET /healthz`", want: []string{"GET /healthz"}},
		// an unknown shorthand must fail, not be guessed
		{name: "unknown ellipsis", md: "`DELETE …/seats`", err: true},
		// methods not in backticks are prose
		{name: "prose", md: "send a GET /x request", want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := extractEndpoints(tc.md)
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			var gs []string
			for _, e := range got {
				gs = append(gs, e.String())
			}
			if !tc.err && !slices.Equal(gs, tc.want) {
				t.Errorf("got %q, want %q", gs, tc.want)
			}
		})
	}
}

func TestExtractErrorTable(t *testing.T) {
	md := "# x\n\n## Errors\n\n| HTTP | code | when |\n|---|---|---|\n" +
		"| 404 | `EVENT_NOT_FOUND`, `TOKEN_NOT_FOUND` | unknown |\n" +
		"| 409 | `NOT_ACTIVE` | says `WAITING` or `DONE` |\n\n## Next\n\n| 500 | `NOT_AN_ERROR` | x |\n"
	got, err := extractErrorTable(md)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"EVENT_NOT_FOUND": 404, "TOKEN_NOT_FOUND": 404, "NOT_ACTIVE": 409}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v (codes only from the code column of the Errors section)", got, want)
	}
}

func TestDocumentHeader(t *testing.T) {
	doc := MustLoadSpec(t)
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.") {
		t.Errorf("openapi = %q, want 3.x", doc["openapi"])
	}
	if v := fmt.Sprint(mapAt(t, doc, doc, "info")["version"]); v != "1" {
		t.Errorf("info.version = %q, want \"1\"", v)
	}
	var urls []string
	for _, s := range doc["servers"].([]any) {
		urls = append(urls, fmt.Sprint(s.(map[string]any)["url"]))
	}
	if !slices.Contains(urls, "http://127.0.0.1:8080") {
		t.Errorf("servers = %q, want http://127.0.0.1:8080 among them", urls)
	}
}

// TestEndpointsInStep: every route API.md names is in the OpenAPI paths.
func TestEndpointsInStep(t *testing.T) {
	doc := MustLoadSpec(t)
	md := MustReadAPIMD(t)
	eps, err := extractEndpoints(md)
	if err != nil {
		t.Error(err)
	}
	if len(eps) == 0 {
		t.Fatal("no `METHOD /path` found in API.md; the extractor is out of date")
	}
	paths := mapAt(t, doc, doc, "paths")
	for _, e := range eps {
		t.Run(e.String(), func(t *testing.T) {
			item, ok := paths[e.path]
			if !ok {
				t.Fatalf("API.md names %s, OpenAPI has no path %q", e, e.path)
			}
			if _, ok := deref(t, doc, item)[strings.ToLower(e.method)]; !ok {
				t.Fatalf("API.md names %s, OpenAPI path %q has no %s operation", e, e.path, strings.ToLower(e.method))
			}
		})
	}
}

// extraCodesKey names the ErrorCode extension that lists codes the server adds
// to API.md's table (API.md allows additions), each with its HTTP status.
const extraCodesKey = "x-rushline-added-codes"

// mustCodeTable is API.md's error table plus the codes the document declares
// under extraCodesKey, none of which may be in API.md already.
func mustCodeTable(tb testing.TB, doc map[string]any) map[string]int {
	tb.Helper()
	table, err := extractErrorTable(MustReadAPIMD(tb))
	if err != nil {
		tb.Fatalf("API.md: %v", err)
	}
	extra, _ := mapAt(tb, doc, doc, "components", "schemas", "ErrorCode")[extraCodesKey].(map[string]any)
	for c, v := range extra {
		if _, dup := table[c]; dup {
			tb.Errorf("%s lists %s, which API.md already has", extraCodesKey, c)
		}
		status, ok := v.(int)
		if !ok || http.StatusText(status) == "" {
			tb.Fatalf("%s: %s has status %v, want an HTTP status", extraCodesKey, c, v)
		}
		table[c] = status
	}
	return table
}

// TestErrorCodesInStep: the Error code enum is exactly API.md's error table
// plus the codes the document declares as added.
func TestErrorCodesInStep(t *testing.T) {
	doc := MustLoadSpec(t)
	table := mustCodeTable(t, doc)
	code := mapAt(t, doc, doc, "components", "schemas", "Error", "properties", "error", "properties", "code")
	enum := stringList(code["enum"])
	if len(enum) == 0 {
		t.Fatal("Error.error.code has no enum")
	}
	for c := range table {
		if !slices.Contains(enum, c) {
			t.Errorf("API.md error code %s is missing from the OpenAPI Error code enum", c)
		}
	}
	for _, c := range enum {
		if _, ok := table[c]; !ok {
			t.Errorf("OpenAPI Error code %s is not in API.md's error table", c)
		}
	}
}

// TestProseCodesInTable: a "409 `CODE`" anywhere in API.md agrees with the table.
func TestProseCodesInTable(t *testing.T) {
	md := MustReadAPIMD(t)
	table, err := extractErrorTable(md)
	if err != nil {
		t.Fatalf("API.md: %v", err)
	}
	for _, m := range proseCodeRe.FindAllStringSubmatch(md, -1) {
		status, _ := strconv.Atoi(m[1])
		if got, ok := table[m[2]]; !ok || got != status {
			t.Errorf("API.md mentions %s %s, but its error table has %s under %d", m[1], m[2], m[2], got)
		}
	}
}

type operation struct {
	method, path string
	item, op     map[string]any
}

func operations(t *testing.T, doc map[string]any) []operation {
	t.Helper()
	var out []operation
	for path, item := range mapAt(t, doc, doc, "paths") {
		it := deref(t, doc, item)
		for _, m := range httpMethods {
			if op, ok := it[m]; ok {
				out = append(out, operation{m, path, it, deref(t, doc, op)})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].path+" "+out[i].method < out[j].path+" "+out[j].method
	})
	if len(out) == 0 {
		t.Fatal("OpenAPI has no operations")
	}
	return out
}

// TestOperations: operationId, a 2xx answer and declared path parameters.
func TestOperations(t *testing.T) {
	doc := MustLoadSpec(t)
	ids := map[string]string{}
	for _, o := range operations(t, doc) {
		name := strings.ToUpper(o.method) + " " + o.path
		t.Run(name, func(t *testing.T) {
			id, _ := o.op["operationId"].(string)
			if id == "" {
				t.Error("no operationId")
			} else if prev, dup := ids[id]; dup {
				t.Errorf("operationId %q also used by %s", id, prev)
			}
			ids[id] = name

			responses := mapAt(t, doc, o.op, "responses")
			ok2xx := false
			for code := range responses {
				if len(code) == 3 && code[0] == '2' {
					ok2xx = true
				}
			}
			if !ok2xx {
				t.Error("no 2xx response")
			}

			declared := map[string]bool{}
			for _, list := range []any{o.item["parameters"], o.op["parameters"]} {
				ps, _ := list.([]any)
				for _, p := range ps {
					pm := deref(t, doc, p)
					if pm["in"] != "path" {
						continue
					}
					name := fmt.Sprint(pm["name"])
					declared[name] = true
					if pm["required"] != true {
						t.Errorf("path parameter %q is not required: true", name)
					}
				}
			}
			inTemplate := map[string]bool{}
			for _, m := range pathParamRe.FindAllStringSubmatch(o.path, -1) {
				inTemplate[m[1]] = true
				if !declared[m[1]] {
					t.Errorf("path parameter {%s} is not declared", m[1])
				}
			}
			for name := range declared {
				if !inTemplate[name] {
					t.Errorf("path parameter %q is declared but not in the path", name)
				}
			}
		})
	}
}

// TestErrorResponses: every non-2xx answer is the Error body, narrowed to codes
// that API.md's table files under that very status; 429 and 503 carry Retry-After.
func TestErrorResponses(t *testing.T) {
	doc := MustLoadSpec(t)
	table := mustCodeTable(t, doc)
	errorRef := "#/components/schemas/Error"
	for _, o := range operations(t, doc) {
		for status, resp := range mapAt(t, doc, o.op, "responses") {
			if len(status) != 3 || status[0] == '2' || status[0] == '1' || status[0] == '3' {
				continue
			}
			t.Run(strings.ToUpper(o.method)+" "+o.path+" "+status, func(t *testing.T) {
				r := deref(t, doc, resp)
				code, _ := strconv.Atoi(status)
				if http.StatusText(code) == "" {
					t.Fatalf("unknown HTTP status %s", status)
				}
				if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
					hs, _ := r["headers"].(map[string]any)
					if _, ok := hs["Retry-After"]; !ok {
						t.Errorf("%d without a Retry-After header", code)
					}
				}
				raw, _ := mapAt(t, doc, r, "content", "application/json")["schema"].(map[string]any)
				var narrowed []string
				switch {
				case raw["$ref"] == errorRef:
				case raw["allOf"] != nil:
					all, _ := raw["allOf"].([]any)
					if len(all) < 2 || all[0].(map[string]any)["$ref"] != errorRef {
						t.Fatalf("allOf must be %s plus a code enum", errorRef)
					}
					for _, sub := range all[1:] {
						c := mapAt(t, doc, sub, "properties", "error", "properties", "code")
						narrowed = append(narrowed, stringList(c["enum"])...)
					}
				default:
					t.Fatalf("error body is not %s", errorRef)
				}
				if len(narrowed) == 0 {
					t.Fatalf("%d response does not name its error codes (allOf Error + code enum)", code)
				}
				for _, c := range narrowed {
					want, ok := table[c]
					switch {
					case !ok:
						t.Errorf("code %s is not in API.md's error table", c)
					case want != code:
						t.Errorf("code %s is a %d in API.md, documented here under %d", c, want, code)
					}
				}
			})
		}
	}
}

// TestRefsResolve: every local $ref points at something.
func TestRefsResolve(t *testing.T) {
	doc := MustLoadSpec(t)
	var walk func(at string, v any)
	walk = func(at string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if k == "$ref" {
					if _, err := lookup(doc, fmt.Sprint(x)); err != nil {
						t.Errorf("%s: %v", at, err)
					}
					continue
				}
				walk(at+"/"+k, x)
			}
		case []any:
			for i, x := range v {
				walk(at+"/"+strconv.Itoa(i), x)
			}
		}
	}
	walk("#", doc)
}

// TestSchemaConstraints: the field rules API.md states in prose.
func TestSchemaConstraints(t *testing.T) {
	doc := MustLoadSpec(t)
	f := func(x float64) *float64 { return &x }
	type tc struct {
		path     string // schema, then property names
		min, max *float64
		minLen   *float64
		maxLen   *float64
		pattern  string
		enum     []string
	}
	cases := []tc{
		{path: "EventCreate.id", pattern: "^[a-z0-9-]{1,64}$"},
		{path: "Event.id", pattern: "^[a-z0-9-]{1,64}$"},
		{path: "EventCreate.seats", min: f(1), max: f(1_000_000)},
		{path: "EventCreate.policy", enum: []string{"capacity", "batch", "adaptive"}},
		{path: "EventCreate.max_tps", min: f(0)},
		{path: "EventPatch.policy", enum: []string{"capacity", "batch", "adaptive"}},
		{path: "EventPatch.max_tps", min: f(0)},
		{path: "EventCreate.priority_share", min: f(0), max: f(1)},
		{path: "EventPatch.priority_share", min: f(0), max: f(1)},
		{path: "QueueJoin.priority_code", pattern: "^[A-Za-z0-9_.-]{1,64}$"},
		{path: "SessionCreate.nickname", minLen: f(1), maxLen: f(32)},
		{path: "QueueJoin.user_type", enum: []string{"ACTUAL", "VIRTUAL"}},
		{path: "QueueEntry.user_type", enum: []string{"ACTUAL", "VIRTUAL"}},
		{path: "QueueEntry.position", min: f(1)},
		{path: "QueueStatus.position", min: f(1)},
		{path: "QueueStatus.status", enum: []string{"WAITING", "ACTIVE", "EXPIRED", "DONE", "LEFT"}},
		{path: "Error.error.status", enum: []string{"WAITING", "EXPIRED", "DONE", "LEFT"}},
		{path: "SseClosed.status", enum: []string{"DONE", "LEFT"}},
	}
	for _, s := range []string{"EventCreate", "EventPatch", "Event"} {
		cases = append(cases,
			tc{path: s + ".capacity", min: f(1), max: f(1_000_000)},
			tc{path: s + ".admit_batch", min: f(1), max: f(100_000)},
			tc{path: s + ".admit_interval_ms", min: f(50), max: f(3_600_000)},
			tc{path: s + ".active_ttl_s", min: f(1), max: f(86_400)},
		)
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			parts := strings.Split(c.path, ".")
			s := mapAt(t, doc, doc, "components", "schemas", parts[0])
			for _, p := range parts[1:] {
				prop, ok := properties(t, doc, s)[p]
				if !ok {
					t.Fatalf("no property %q", p)
				}
				s = deref(t, doc, prop)
			}
			check := func(key string, want *float64) {
				if want == nil {
					return
				}
				got, ok := number(s[key])
				if !ok || got != *want {
					t.Errorf("%s = %v, want %v", key, s[key], *want)
				}
			}
			check("minimum", c.min)
			check("maximum", c.max)
			check("minLength", c.minLen)
			check("maxLength", c.maxLen)
			if c.pattern != "" && s["pattern"] != c.pattern {
				t.Errorf("pattern = %v, want %q", s["pattern"], c.pattern)
			}
			if c.enum != nil {
				got := stringList(s["enum"])
				if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(c.enum))) {
					t.Errorf("enum = %q, want %q", got, c.enum)
				}
			}
		})
	}
}

// TestSchemaFields: the fields API.md names on each body.
func TestSchemaFields(t *testing.T) {
	doc := MustLoadSpec(t)
	for _, c := range []struct {
		schema   string
		fields   []string
		optional []string // must exist but not be required
	}{
		{"Session", []string{"user_id", "nickname", "access_token", "expires_at"}, nil},
		{"EventCreate", []string{"id", "name", "seats", "capacity", "admit_batch", "admit_interval_ms", "active_ttl_s", "policy"},
			[]string{"max_tps", "opens_at", "closes_at", "priority_share"}},
		{"EventPatch", nil, []string{"capacity", "admit_batch", "admit_interval_ms", "active_ttl_s", "policy", "max_tps", "closes_at", "priority_share"}},
		{"Event", []string{"id", "name", "seats", "capacity", "admit_batch", "admit_interval_ms", "active_ttl_s", "policy", "max_tps", "paused", "created_at"},
			[]string{"opens_at", "closes_at", "priority_share"}},
		{"EventWithStats", []string{"id", "paused", "created_at", "stats"}, nil},
		{"EventStats", []string{"waiting", "active", "admitted_total", "sold", "seats_left"}, nil},
		{"EventList", []string{"events"}, nil},
		{"LoadReport", []string{"tps"}, nil},
		{"QueueJoin", []string{"user_type"}, []string{"bot_id", "priority_code", "priority"}},
		{"QueueEntry", []string{"token", "user_id", "user_type", "status", "waiting"}, []string{"position", "eta_s", "pass", "expires_at", "lane"}},
		{"QueueStatus", []string{"status", "waiting", "admitted_total"}, []string{"position", "eta_s", "pass", "expires_at", "lane"}},
		{"SsePosition", []string{"position", "waiting", "eta_s"}, []string{"lane"}},
		{"PriorityGrant", nil, []string{"user_ids", "codes"}},
		{"PriorityGranted", []string{"users", "codes"}, nil},
		{"PriorityGrantList", []string{"users", "codes"}, nil},
		{"SseAdmitted", []string{"pass", "expires_at"}, nil},
		{"SseClosed", []string{"status"}, nil},
		{"VerifyRequest", []string{"token", "user_id"}, nil},
		{"VerifyResponse", []string{"status", "expires_at"}, nil},
		{"Seat", []string{"id", "taken"}, nil},
		{"SeatList", []string{"seats"}, nil},
		{"OrderCreate", []string{"token", "seat"}, nil},
		{"Order", []string{"order_id", "seat", "user_id"}, nil},
		{"PracticeCreate", []string{"scenario"}, nil},
		{"Practice", []string{"event", "opens_at", "bots"}, nil},
		{"PracticeResult", []string{"got_seat", "bots"}, []string{"reaction_ms", "position_at_join", "bots_ahead", "wait_ms", "seat"}},
		{"Error", []string{"error"}, nil},
		// API-next.md, "Practice drops".
		{"Drop", []string{"id", "event", "scenario", "level", "crowd", "seats", "opens_at", "phase", "people", "server_time"}, nil},
		{"DropStats", []string{"waiting", "active", "sold", "seats_left", "people_joined", "crowd_joined"}, nil},
		{"DropCreate", []string{"scenario", "opens_at"}, []string{"level", "crowd", "seats"}},
		{"DropResults", []string{"phase", "people", "crowd"}, nil},
		{"DropEntry", []string{"rank", "user_id", "nickname", "reaction_ms", "position", "outcome", "seat", "wait_ms"}, nil},
		{"DropMine", []string{"rank", "position", "outcome", "percentile", "false_starts"}, nil},
		{"Leaderboard", []string{"entries"}, nil},
	} {
		t.Run(c.schema, func(t *testing.T) {
			s := mapAt(t, doc, doc, "components", "schemas", c.schema)
			props := properties(t, doc, s)
			required := requiredOf(t, doc, s)
			for _, f := range c.fields {
				if _, ok := props[f]; !ok {
					t.Errorf("no property %q", f)
				}
				if !required[f] {
					t.Errorf("%q is not required", f)
				}
			}
			for _, f := range c.optional {
				if _, ok := props[f]; !ok {
					t.Errorf("no property %q", f)
				}
				if required[f] {
					t.Errorf("%q is required, API.md makes it optional or conditional", f)
				}
			}
		})
	}
}

func requiredOf(tb testing.TB, doc map[string]any, s map[string]any) map[string]bool {
	tb.Helper()
	out := map[string]bool{}
	for _, r := range stringList(s["required"]) {
		out[r] = true
	}
	if all, ok := s["allOf"].([]any); ok {
		for _, sub := range all {
			for r := range requiredOf(tb, doc, deref(tb, doc, sub)) {
				out[r] = true
			}
		}
	}
	return out
}

// TestStream: the SSE route is text/event-stream, takes Last-Event-ID and
// describes the four messages.
func TestStream(t *testing.T) {
	doc := MustLoadSpec(t)
	op := mapAt(t, doc, doc, "paths", "/api/v1/events/{event}/queue/{token}/stream", "get")
	ok := mapAt(t, doc, op, "responses", "200")
	if _, has := mapAt(t, doc, ok, "content")["text/event-stream"]; !has {
		t.Error("200 is not text/event-stream")
	}
	found := false
	ps, _ := op["parameters"].([]any)
	for _, p := range ps {
		pm := deref(t, doc, p)
		if pm["in"] == "header" && strings.EqualFold(fmt.Sprint(pm["name"]), "Last-Event-ID") {
			found = true
		}
	}
	if !found {
		t.Error("no Last-Event-ID header parameter")
	}
	desc := fmt.Sprint(op["description"])
	events := mapAt(t, doc, ok, "x-sse-events")
	for _, e := range []string{"position", "admitted", "expired", "closed"} {
		if !strings.Contains(desc, "`"+e+"`") {
			t.Errorf("description does not describe the %q message", e)
		}
		if _, has := events[e]; !has {
			t.Errorf("x-sse-events has no %q", e)
		}
	}
}
