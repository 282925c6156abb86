package httpapi

import (
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
)

// routeCode labels one latency series.
type routeCode struct {
	route string
	code  int
}

// observers caches the latency histogram of each (route, status code), so a
// request neither formats nor hashes label values. Routes are the
// registered patterns and codes a few dozen, so the map stays small. Safe
// for concurrent use.
type observers struct {
	vec *prometheus.HistogramVec
	mu  sync.RWMutex
	m   map[routeCode]prometheus.Observer
}

func newObservers(vec *prometheus.HistogramVec) *observers {
	return &observers{vec: vec, m: map[routeCode]prometheus.Observer{}}
}

func (o *observers) get(route string, code int) prometheus.Observer {
	k := routeCode{route, code}
	o.mu.RLock()
	obs, ok := o.m[k]
	o.mu.RUnlock()
	if ok {
		return obs
	}
	obs = o.vec.WithLabelValues(route, strconv.Itoa(code))
	o.mu.Lock()
	o.m[k] = obs
	o.mu.Unlock()
	return obs
}

// jsonBufs recycles the buffers hot answers are encoded into.
var jsonBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// jsonContentType is the Content-Type of hot answers, one slice shared by
// all (nothing writes into a header's values).
var jsonContentType = []string{"application/json; charset=utf-8"}

// writeEntry answers b as JSON: the bytes encoding/json would write, without
// its reflection (TestEntryJSONMatchesEncodingJSON holds the two together),
// and straight to the writer, as gin's c.Data would but with no allocation.
func writeEntry(c *gin.Context, code int, b *entryJSON) {
	bp := jsonBufs.Get().(*[]byte)
	buf := b.appendJSON((*bp)[:0])
	c.Writer.Header()["Content-Type"] = jsonContentType
	c.Status(code)
	_, _ = c.Writer.Write(buf)
	*bp = buf
	jsonBufs.Put(bp)
}

// appendJSON appends b encoded as encoding/json would, omitempty included.
func (b *entryJSON) appendJSON(dst []byte) []byte {
	o := jsonObject{b: append(dst, '{')}
	o.str("token", b.Token, true)
	o.str("user_id", b.UserID, true)
	o.str("user_type", string(b.UserType), true)
	o.str("status", string(b.Status), false)
	o.int("seq", b.Seq, true)
	o.int("position", b.Position, true)
	o.int("waiting", b.Waiting, false)
	if b.ETASeconds != nil {
		o.int("eta_s", *b.ETASeconds, false)
	}
	o.int("admitted_total", b.AdmittedTotal, false)
	o.str("pass", b.Pass, true)
	o.time("expires_at", b.ExpiresAt)
	o.time("admitted_at", b.AdmittedAt)
	o.int("admission_no", b.AdmissionNo, true)
	o.str("lane", string(b.Lane), true)
	return append(o.b, '}')
}

// jsonObject appends the members of one JSON object.
type jsonObject struct {
	b    []byte
	more bool
}

func (o *jsonObject) key(k string) {
	if o.more {
		o.b = append(o.b, ',')
	}
	o.more = true
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, '"', ':')
}

func (o *jsonObject) str(k, v string, omitEmpty bool) {
	if omitEmpty && v == "" {
		return
	}
	o.key(k)
	o.b = appendJSONString(o.b, v)
}

func (o *jsonObject) int(k string, v int64, omitEmpty bool) {
	if omitEmpty && v == 0 {
		return
	}
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
}

func (o *jsonObject) time(k string, t *time.Time) {
	if t == nil {
		return
	}
	o.key(k)
	js, err := t.MarshalJSON()
	if err != nil { // a year outside 0-9999: never from the engine's clock
		js = []byte("null")
	}
	o.b = append(o.b, js...)
}

// appendJSONString quotes s as encoding/json does; anything but plain
// printable ASCII goes through encoding/json itself.
func appendJSONString(dst []byte, s string) []byte {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			js, _ := json.Marshal(s)
			return append(dst, js...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
