package redisproc

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// tailWriter passes output on to w and keeps the last tailLines lines so
// errors can quote them. It is safe for concurrent use.
type tailWriter struct {
	w io.Writer

	mu    sync.Mutex
	lines []string
	part  []byte // unterminated last line
}

func newTailWriter(w io.Writer) *tailWriter {
	if w == nil {
		w = io.Discard
	}
	return &tailWriter{w: w}
}

// Write never fails: a broken log sink must not stall or kill the child.
func (t *tailWriter) Write(b []byte) (int, error) {
	_, _ = t.w.Write(b)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.part = append(t.part, b...)
	for {
		i := bytes.IndexByte(t.part, '\n')
		if i < 0 {
			break
		}
		t.lines = append(t.lines, strings.TrimRight(string(t.part[:i]), "\r"))
		t.part = t.part[i+1:]
	}
	if n := len(t.lines) - tailLines; n > 0 {
		t.lines = append(t.lines[:0], t.lines[n:]...)
	}
	if len(t.part) > 4096 { // a runaway line: keep its end
		t.part = append(t.part[:0], t.part[len(t.part)-4096:]...)
	}
	return len(b), nil
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.Join(t.lines, "\n")
	if len(t.part) > 0 {
		if s != "" {
			s += "\n"
		}
		s += string(t.part)
	}
	return s
}

func (t *tailWriter) contains(sub string) bool { return strings.Contains(t.String(), sub) }

// quote formats the tail for appending to an error message.
func (t *tailWriter) quote() string {
	s := t.String()
	if s == "" {
		return " (no output)"
	}
	return "\nlast output:\n" + s
}
