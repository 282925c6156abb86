package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/rushline/rushline/internal/didyoumean"
)

// Load reads, defaults and validates the scenario file at path. Problems in
// the file come back as Errors whose entries carry the file name, e.g.
// "concert-rush.yaml:12: phases[1].rate: must be > 0"; a file that can't be
// read gives the wrapped os error. Safe for concurrent use.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	s, err := Parse(data)
	var errs Errors
	if errors.As(err, &errs) {
		for _, e := range errs {
			e.File = path
		}
		return nil, errs
	}
	return s, err
}

// Parse reads a scenario from YAML, applies the defaults and validates it.
// Unknown fields are errors. On failure the error is Errors, holding every
// problem found, sorted by line; the scenario is then nil. Safe for
// concurrent use.
func Parse(data []byte) (*Scenario, error) {
	root, err := parseYAML(data)
	if err != nil {
		return nil, err
	}
	d := &decoder{lines: map[string]int{}, bad: map[string]bool{}, rootLine: root.Line}
	s := d.scenario(root)
	d.defaults(s)
	d.validate(s)
	if len(d.errs) > 0 {
		d.errs.sort()
		return nil, d.errs
	}
	return s, nil
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseYAML returns the root node of the only document in data.
func parseYAML(data []byte) (root *yaml.Node, err error) {
	defer func() {
		// yaml.v3 has panicked on hostile input before; a bad file must stay an error.
		if r := recover(); r != nil {
			root, err = nil, Errors{{Line: 1, Message: fmt.Sprintf("unreadable YAML (%v)", r)}}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, Errors{{Line: 1, Message: "the file is empty"}}
		}
		return nil, yamlError(err, data)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		line := next.Line
		if len(next.Content) > 0 {
			line = next.Content[0].Line
		}
		return nil, Errors{{Line: line, Message: "a scenario file holds one YAML document; remove the second"}}
	case !errors.Is(err, io.EOF):
		return nil, yamlError(err, data)
	}
	root = &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	root = resolve(root)
	if root.Kind != yaml.MappingNode {
		return nil, Errors{{Line: max(root.Line, 1), Message: "a scenario is a mapping of fields: name, event, phases, bots, thresholds"}}
	}
	return root, nil
}

// yamlParserProblems are the messages of yaml.v3's parser (not its scanner).
// yaml.v3 v3.0.1 reports their lines 0-based, so they need one added.
var yamlParserProblems = map[string]bool{
	"did not find expected <stream-start>":   true,
	"did not find expected <document start>": true,
	"found undefined tag handle":             true,
	"did not find expected node content":     true,
	"did not find expected '-' indicator":    true,
	"did not find expected key":              true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found duplicate %TAG directive":         true,
}

func yamlError(err error, data []byte) Errors {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		if line, err := strconv.Atoi(m[1]); err == nil {
			if yamlParserProblems[m[2]] {
				line++
			}
			return Errors{{Line: line, Message: m[2]}}
		}
	}
	// No line: the problem is on the first line, or it is a bad byte (the
	// reader's errors carry no line), which we find ourselves.
	line := 1
	if strings.Contains(msg, "UTF-") || strings.Contains(msg, "Unicode") || strings.Contains(msg, "surrogate") ||
		strings.Contains(msg, "control characters") {
		line = max(badByteLine(data), 1)
	}
	return Errors{{Line: line, Message: msg}}
}

// badByteLine is the line of the first byte YAML refuses: invalid UTF-8 or a
// control character; 0 when there is none.
func badByteLine(data []byte) int {
	line := 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size <= 1,
			r < 0x20 && r != '\t' && r != '\n' && r != '\r',
			r >= 0x7f && r <= 0x9f && r != 0x85,
			r == 0xfffe || r == 0xffff:
			return line
		case r == '\n':
			line++
		}
		i += size
	}
	return 0
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// decoder walks the YAML tree into a Scenario. It records the line of every
// field it sees (by path, e.g. "phases[1].rate") so that defaults can tell a
// missing field from a zero one and validation can say where a problem is.
type decoder struct {
	errs     Errors
	lines    map[string]int  // path → line of its key, or of its list item
	bad      map[string]bool // paths whose value did not decode; validation skips them
	rootLine int
}

// entry is one key and its value.
type entry struct{ key, val *yaml.Node }

type handlers map[string]func(e entry, path string)

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// parent strips the last ".key" or "[i]" of a path.
func parent(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	return path[:i]
}

func (d *decoder) errorAt(line int, path, format string, args ...any) {
	d.errs = append(d.errs, &Error{Line: line, Field: path, Message: fmt.Sprintf(format, args...)})
}

// invalid records a problem with the field at path and marks it bad.
func (d *decoder) invalid(path, format string, args ...any) {
	d.bad[path] = true
	d.errorAt(d.line(path), path, format, args...)
}

// line is where path stands, or where its nearest present parent does.
func (d *decoder) line(path string) int {
	for {
		if l, ok := d.lines[path]; ok {
			return l
		}
		if path == "" {
			return d.rootLine
		}
		path = parent(path)
	}
}

// has reports whether the file gave the field.
func (d *decoder) has(path string) bool { _, ok := d.lines[path]; return ok }

// ok reports whether the file gave the field and its value decoded.
func (d *decoder) ok(path string) bool { return d.has(path) && !d.bad[path] }

// fields walks the mapping n, handing each key to its handler. Unknown and
// repeated keys are errors. Merge keys (<<: *anchor) are followed; keys
// written out win over merged ones.
func (d *decoder) fields(n *yaml.Node, line int, path, what string, hs handlers) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		d.bad[path] = true
		d.errorAt(line, path, "must be %s", what)
		return
	}
	seen := map[string]int{}
	var out []entry
	add := func(m *yaml.Node, merged bool) (merges []*yaml.Node) {
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.Value == "<<" && k.ShortTag() == "!!merge" {
				merges = append(merges, v)
				continue
			}
			if k.Kind != yaml.ScalarNode {
				d.errorAt(k.Line, path, "field names must be plain words")
				continue
			}
			if first, dup := seen[k.Value]; dup {
				if !merged {
					d.errorAt(k.Line, join(path, k.Value), "repeats the field given on line %d", first)
				}
				continue
			}
			seen[k.Value] = k.Line
			out = append(out, entry{k, v})
		}
		return merges
	}
	// Merged mappings are visited once each, so anchors can't blow up the walk.
	visited := map[*yaml.Node]bool{n: true}
	queue := add(n, false)
	for len(queue) > 0 {
		m := resolve(queue[0])
		queue = queue[1:]
		if visited[m] {
			continue
		}
		visited[m] = true
		switch m.Kind {
		case yaml.SequenceNode:
			queue = append(append([]*yaml.Node(nil), m.Content...), queue...)
		case yaml.MappingNode:
			queue = append(add(m, true), queue...)
		default:
			d.errorAt(m.Line, path, "<< must merge a mapping or a list of mappings")
		}
	}
	for _, e := range out {
		p := join(path, e.key.Value)
		h, ok := hs[e.key.Value]
		if !ok && path == "" && strings.HasPrefix(e.key.Value, "x-") {
			continue // extension fields (x-common: &anchor …) hold anchors for later use
		}
		if !ok {
			d.errorAt(e.key.Line, p, "unknown field%s; known here: %s", suggest(e.key.Value, hs), known(hs))
			continue
		}
		d.lines[p] = e.key.Line
		h(e, p)
	}
}

func known(hs handlers) string {
	names := make([]string, 0, len(hs))
	for k := range hs {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// suggest names the known field closest to a misspelt one.
func suggest(name string, hs handlers) string {
	best := didyoumean.Closest(name, slices.Collect(maps.Keys(hs))...)
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// scalar returns the value of e when it is a non-null scalar.
func (d *decoder) scalar(e entry, path, what string) (*yaml.Node, bool) {
	v := resolve(e.val)
	switch {
	case v.Kind != yaml.ScalarNode:
		d.invalid(path, "must be %s", what)
		return nil, false
	case v.ShortTag() == "!!null":
		d.invalid(path, "has no value; want %s", what)
		return nil, false
	}
	return v, true
}

func (d *decoder) str(e entry, path string) string {
	v, ok := d.scalar(e, path, "a string")
	if !ok {
		return ""
	}
	return v.Value
}

func (d *decoder) integer(e entry, path string) int {
	v, ok := d.scalar(e, path, "a whole number")
	if !ok {
		return 0
	}
	switch v.ShortTag() {
	case "!!int":
		var i int64
		if err := v.Decode(&i); err != nil || i > math.MaxInt || i < math.MinInt {
			d.invalid(path, "%s is out of range", v.Value)
			return 0
		}
		return int(i)
	case "!!float":
		var f float64
		if err := v.Decode(&f); err == nil && f == math.Trunc(f) {
			if math.Abs(f) > 1<<53 {
				d.invalid(path, "%s is out of range", v.Value)
				return 0
			}
			return int(f)
		}
	}
	d.invalid(path, "must be a whole number, got %q", v.Value)
	return 0
}

func (d *decoder) int64(e entry, path string) int64 {
	v, ok := d.scalar(e, path, "a whole number")
	if !ok {
		return 0
	}
	var i int64
	if v.ShortTag() != "!!int" || v.Decode(&i) != nil {
		d.invalid(path, "must be a whole number, got %q", v.Value)
		return 0
	}
	return i
}

func (d *decoder) number(e entry, path string) float64 {
	v, ok := d.scalar(e, path, "a number")
	if !ok {
		return 0
	}
	var f float64
	if t := v.ShortTag(); (t != "!!int" && t != "!!float") || v.Decode(&f) != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		d.invalid(path, "must be a number, got %q", v.Value)
		return 0
	}
	return f
}

func (d *decoder) duration(e entry, path string) Duration {
	return parsed(d, e, path, "a duration such as 300ms, 2s or 1m30s", ParseDuration)
}

func (d *decoder) rate(e entry, path string) Rate {
	return parsed(d, e, path, "a rate such as 50/s, 3000/m or 1.5", ParseRate)
}

// parsed reads a scalar with parse; a problem is recorded and gives the zero T.
func parsed[T any](d *decoder, e entry, path, what string, parse func(string) (T, error)) T {
	var zero T
	v, ok := d.scalar(e, path, what)
	if !ok {
		return zero
	}
	x, err := parse(v.Value)
	if err != nil {
		d.invalid(path, "%v", err)
		return zero
	}
	return x
}

// list returns the items of a sequence, recording each item's line.
func (d *decoder) list(e entry, path, what string) []*yaml.Node {
	v := resolve(e.val)
	if v.Kind != yaml.SequenceNode {
		d.invalid(path, "must be a list of %s", what)
		return nil
	}
	for i, item := range v.Content {
		d.lines[index(path, i)] = item.Line
	}
	return v.Content
}

func (d *decoder) scenario(n *yaml.Node) *Scenario {
	s := &Scenario{}
	d.fields(n, n.Line, "", "a mapping", handlers{
		"name":        func(e entry, p string) { s.Name = d.str(e, p) },
		"description": func(e entry, p string) { s.Description = d.str(e, p) },
		"seed":        func(e entry, p string) { s.Seed = d.int64(e, p) },
		"event":       func(e entry, p string) { s.Event = d.event(e, p) },
		"phases": func(e entry, p string) {
			for i, item := range d.list(e, p, "phases") {
				s.Phases = append(s.Phases, d.phase(item, index(p, i)))
			}
		},
		"bots": func(e entry, p string) {
			for i, item := range d.list(e, p, "bots") {
				s.Bots = append(s.Bots, d.bot(item, index(p, i)))
			}
		},
		"steps": func(e entry, p string) {
			for i, item := range d.list(e, p, "step names") {
				s.Steps = append(s.Steps, d.str(entry{val: item}, index(p, i)))
			}
		},
		"thresholds": func(e entry, p string) {
			for i, item := range d.list(e, p, "rules such as \"promotion_p99 < 200ms\"") {
				if t, ok := d.threshold(item, index(p, i)); ok {
					s.Thresholds = append(s.Thresholds, t)
				}
			}
		},
	})
	return s
}

func (d *decoder) event(e entry, path string) Event {
	var ev Event
	d.fields(e.val, e.key.Line, path, "a mapping with use: or create:", handlers{
		"use": func(e entry, p string) { ev.Use = d.str(e, p) },
		"create": func(e entry, p string) {
			c := &EventCreate{}
			d.fields(e.val, e.key.Line, p, "a mapping of event fields (seats, admit_batch, …)", handlers{
				"id":                func(e entry, p string) { c.ID = d.str(e, p) },
				"name":              func(e entry, p string) { c.Name = d.str(e, p) },
				"seats":             func(e entry, p string) { c.Seats = d.integer(e, p) },
				"capacity":          func(e entry, p string) { c.Capacity = d.integer(e, p) },
				"admit_batch":       func(e entry, p string) { c.AdmitBatch = d.integer(e, p) },
				"admit_interval_ms": func(e entry, p string) { c.AdmitIntervalMS = d.integer(e, p) },
				"active_ttl_s":      func(e entry, p string) { c.ActiveTTLS = d.integer(e, p) },
				"policy":            func(e entry, p string) { c.Policy = d.str(e, p) },
				"max_tps":           func(e entry, p string) { c.MaxTPS = d.integer(e, p) },
				"opens_in":          func(e entry, p string) { c.OpensIn = d.duration(e, p) },
				"closes_in":         func(e entry, p string) { c.ClosesIn = d.duration(e, p) },
			})
			if !d.bad[p] {
				ev.Create = c
			}
		},
	})
	return ev
}

func (d *decoder) phase(n *yaml.Node, path string) Phase {
	var ph Phase
	d.fields(n, n.Line, path, "a mapping such as {arrival: constant, rate: 50/s, duration: 30s}", handlers{
		"name":        func(e entry, p string) { ph.Name = d.str(e, p) },
		"arrival":     func(e entry, p string) { ph.Arrival = d.str(e, p) },
		"duration":    func(e entry, p string) { ph.Duration = d.duration(e, p) },
		"rate":        func(e entry, p string) { ph.Rate = d.rate(e, p) },
		"from":        func(e entry, p string) { ph.From = d.rate(e, p) },
		"to":          func(e entry, p string) { ph.To = d.rate(e, p) },
		"users":       func(e entry, p string) { ph.Users = d.integer(e, p) },
		"over":        func(e entry, p string) { ph.Over = d.duration(e, p) },
		"mean":        func(e entry, p string) { ph.Mean = d.rate(e, p) },
		"amplitude":   func(e entry, p string) { ph.Amplitude = d.rate(e, p) },
		"period":      func(e entry, p string) { ph.Period = d.duration(e, p) },
		"concurrency": func(e entry, p string) { ph.Concurrency = d.integer(e, p) },
	})
	return ph
}

func (d *decoder) bot(n *yaml.Node, path string) Bot {
	var b Bot
	d.fields(n, n.Line, path, "a mapping such as {name: fast, weight: 3, wait: sse}", handlers{
		"name":           func(e entry, p string) { b.Name = d.str(e, p) },
		"weight":         func(e entry, p string) { b.Weight = d.number(e, p) },
		"wait":           func(e entry, p string) { b.Wait = d.str(e, p) },
		"poll_interval":  func(e entry, p string) { b.PollInterval = d.duration(e, p) },
		"reaction":       func(e entry, p string) { b.Reaction = d.dist(e, p) },
		"patience":       func(e entry, p string) { b.Patience = d.dist(e, p) },
		"think":          func(e entry, p string) { b.Think = d.dist(e, p) },
		"seat":           func(e entry, p string) { b.Seat = d.str(e, p) },
		"seat_id":        func(e entry, p string) { b.SeatID = d.str(e, p) },
		"retry_on_taken": func(e entry, p string) { b.RetryOnTaken = d.integer(e, p) },
	})
	return b
}

// dist reads a distribution mapping, or a bare duration as a constant.
func (d *decoder) dist(e entry, path string) Dist {
	if v := resolve(e.val); v.Kind == yaml.ScalarNode && v.ShortTag() != "!!null" {
		dur, err := ParseDuration(v.Value)
		if err != nil {
			d.invalid(path, "%v; or write a distribution such as {dist: lognormal, median: 400ms, p90: 1.2s}", err)
			return Dist{}
		}
		d.lines[join(path, "dist")] = e.key.Line
		d.lines[join(path, "value")] = e.key.Line
		return Dist{Kind: DistConstant, Value: dur}
	}
	var ds Dist
	d.fields(e.val, e.key.Line, path, "a distribution such as {dist: lognormal, median: 400ms, p90: 1.2s}, or a duration", handlers{
		"dist":   func(e entry, p string) { ds.Kind = d.str(e, p) },
		"value":  func(e entry, p string) { ds.Value = d.duration(e, p) },
		"min":    func(e entry, p string) { ds.Min = d.duration(e, p) },
		"max":    func(e entry, p string) { ds.Max = d.duration(e, p) },
		"mean":   func(e entry, p string) { ds.Mean = d.duration(e, p) },
		"stddev": func(e entry, p string) { ds.Stddev = d.duration(e, p) },
		"median": func(e entry, p string) { ds.Median = d.duration(e, p) },
		"p90":    func(e entry, p string) { ds.P90 = d.duration(e, p) },
	})
	return ds
}

func (d *decoder) threshold(n *yaml.Node, path string) (Threshold, bool) {
	v := resolve(n)
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
		d.invalid(path, "must be a rule such as \"promotion_p99 < 200ms\"")
		return Threshold{}, false
	}
	t, err := ParseThreshold(v.Value)
	if err != nil {
		d.invalid(path, "%v", err)
		return Threshold{}, false
	}
	t.Line = n.Line
	return t, true
}
