package report

import (
	"cmp"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultLagTolerance is how late (p99) a run's arrivals may start against
// their schedule before the run is flagged "load generator saturated".
const DefaultLagTolerance = 250 * time.Millisecond

// maxErrorKinds bounds the error kinds a step keeps; rarer kinds beyond it
// are counted under "other".
const maxErrorKinds = 20

// Aggregates are what a run records instead of one record per request and
// per bot: counters, per-second series and histograms, which merge by adding.
// A shard of a million bots is a few hundred kilobytes of them.
type Aggregates struct {
	Steps map[string]*StepAgg `json:"steps"`
	// Outcomes counts bots by behaviour, then outcome.
	Outcomes  map[string]map[string]int64 `json:"outcomes"`
	Joined    int64                       `json:"joined"`
	Admitted  int64                       `json:"admitted"`
	Abandoned int64                       `json:"abandoned"`
	Bought    int64                       `json:"bought"`
	// Promotion (streaming bots) and PromotionPoll (polling bots) are
	// admission decision → the bot learns it; Wait is join → admission;
	// Reaction arrival → join.
	Promotion     Histogram `json:"promotion"`
	PromotionPoll Histogram `json:"promotion_poll"`
	Wait          Histogram `json:"wait"`
	Reaction      Histogram `json:"reaction"`
	// Lag is how late each scheduled bot started against its planned
	// arrival; Planned counts scheduled arrivals, HeldBack the bots that
	// waited for a connection slot before they could start.
	Lag      Histogram `json:"arrival_lag"`
	Planned  int64     `json:"planned"`
	HeldBack int64     `json:"held_back"`
	// FIFO holds (seq, admission_no) of every admitted bot: inversions
	// between shards can only be counted on the merged whole.
	FIFO [][2]int64 `json:"fifo"`
	// Seconds are per-second counts since the opening, in time order.
	Seconds []SecondAgg `json:"seconds"`
}

// SecondAgg counts what happened in one second since the opening.
type SecondAgg struct {
	T          int64 `json:"t"`
	Planned    int64 `json:"planned,omitempty"`
	Arrivals   int64 `json:"arrivals,omitempty"`
	Joins      int64 `json:"joins,omitempty"`
	Promotions int64 `json:"promotions,omitempty"`
	Orders     int64 `json:"orders,omitempty"`
}

// StepAgg is one request step's aggregates.
type StepAgg struct {
	Requests   int64 `json:"requests"`
	Success    int64 `json:"success"` // 2xx/3xx answers
	Unexpected int64 `json:"unexpected"`
	// Latency runs from the request written to the connection to its answer
	// read; Wait from the bot deciding to send to the request written (a
	// free connection, a dial): the generator's own delay.
	Latency  Histogram        `json:"latency"`
	Wait     Histogram        `json:"client_wait"`
	Codes    map[string]int64 `json:"status_codes"`
	Errors   []ErrorKind      `json:"errors"`
	BytesIn  int64            `json:"bytes_in"`
	BytesOut int64            `json:"bytes_out"`
	// First is the first request sent, Last the last; LastDone the last answer.
	First    time.Time `json:"first"`
	Last     time.Time `json:"last"`
	LastDone time.Time `json:"last_done"`
}

// ErrorKind is one kind of failed request: a status code and API code, or a
// transport error with its addresses and ids taken out; Example is one
// occurrence as it was.
type ErrorKind struct {
	Step    string `json:"step"`
	Kind    string `json:"kind"`
	Count   int64  `json:"count"`
	Example string `json:"example"`
}

// Recorder collects one run's aggregates and, optionally, its raw bots and
// requests. Safe for concurrent use.
type Recorder struct {
	mu           sync.Mutex
	opens        time.Time
	keepBots     bool
	keepRequests bool
	agg          Aggregates
	seconds      map[int64]*SecondAgg
	bots         []Bot
	requests     []Request
}

// NewRecorder records a run whose event opens at opens; keepBots and
// keepRequests keep the raw records too.
func NewRecorder(opens time.Time, keepBots, keepRequests bool) *Recorder {
	return &Recorder{opens: opens, keepBots: keepBots, keepRequests: keepRequests,
		agg: Aggregates{Steps: map[string]*StepAgg{}, Outcomes: map[string]map[string]int64{}}, seconds: map[int64]*SecondAgg{}}
}

func (r *Recorder) second(t time.Time) *SecondAgg {
	k := secondOf(t, r.opens)
	s := r.seconds[k]
	if s == nil {
		s = &SecondAgg{T: k}
		r.seconds[k] = s
	}
	return s
}

// Plan records the scheduled arrivals, as offsets from the opening.
func (r *Recorder) Plan(offsets ...time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, off := range offsets {
		r.agg.Planned++
		r.second(r.opens.Add(off)).Planned++
	}
}

// Request records one request.
func (r *Recorder) Request(q Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keepRequests {
		r.requests = append(r.requests, q)
	}
	st := r.agg.Steps[q.Step]
	if st == nil {
		st = &StepAgg{Codes: map[string]int64{}}
		r.agg.Steps[q.Step] = st
	}
	st.add(&q)
	if q.Step == StepOrder && ok2xx(&q) {
		r.second(q.At.Add(q.Wait+q.Latency)).Orders++
	}
}

func ok2xx(q *Request) bool { return q.Code >= 200 && q.Code < 300 && q.Error == "" }

func (st *StepAgg) add(q *Request) {
	st.Requests++
	if q.Error == "" && q.Code >= 200 && q.Code < 400 {
		st.Success++
	}
	if unexpected(q) {
		st.Unexpected++
	}
	st.Latency.Add(q.Latency)
	st.Wait.Add(q.Wait)
	st.Codes[strconv.Itoa(q.Code)]++
	st.BytesIn += max(q.BytesIn, 0)
	st.BytesOut += max(q.BytesOut, 0)
	if st.First.IsZero() || q.At.Before(st.First) {
		st.First = q.At
	}
	if q.At.After(st.Last) {
		st.Last = q.At
	}
	if done := q.At.Add(q.Wait + q.Latency); done.After(st.LastDone) {
		st.LastDone = done
	}
	if kind, example := errorKind(q); kind != "" {
		st.Errors = addError(st.Errors, ErrorKind{Step: q.Step, Kind: kind, Count: 1, Example: example})
	}
}

// addError counts e into kinds, keeping at most maxErrorKinds of them.
func addError(kinds []ErrorKind, e ErrorKind) []ErrorKind {
	for i := range kinds {
		if kinds[i].Kind == e.Kind {
			// The smallest example, so merged shards show what one run would.
			kinds[i].Count += e.Count
			kinds[i].Example = min(kinds[i].Example, e.Example)
			return kinds
		}
	}
	if e.Kind != "other" && len(kinds) >= maxErrorKinds-1 {
		e.Kind = "other"
		return addError(kinds, e)
	}
	return append(kinds, e)
}

var (
	quotedURL = regexp.MustCompile(`"(https?://[^"]*)"`)
	addrPort  = regexp.MustCompile(`\[?[0-9a-fA-F.:]*[0-9a-fA-F]\]?:\d+`)
	// idSegment is the segment after a collection of the API's paths.
	idSegment = regexp.MustCompile(`/(events|queue|orders|drops|races|practice|users|seats)/[^/?#]+`)
)

// errorKind names the kind of a failed request (empty for a success): the
// status code and API code of an error answer, or a transport error with
// its URL's ids and the addresses taken out, so one kind is one line
// however many tokens failed alike.
func errorKind(q *Request) (kind, example string) {
	switch {
	case q.Error != "":
		k := quotedURL.ReplaceAllStringFunc(q.Error, func(s string) string {
			u := strings.Trim(s, `"`)
			if i := strings.Index(u[len("https://"):], "/"); i >= 0 {
				u = u[len("https://")+i:]
			}
			return idSegment.ReplaceAllString(u, "/$1/{id}")
		})
		return addrPort.ReplaceAllString(k, "ADDR"), q.Error
	case q.Code >= 400 || q.Code <= 0:
		k := strconv.Itoa(q.Code)
		if q.ErrCode != "" {
			k += " " + q.ErrCode
		}
		if q.ErrStatus != "" {
			k += " (" + q.ErrStatus + ")"
		}
		return k, k
	}
	return "", ""
}

// Bot records one finished bot.
func (r *Recorder) Bot(b Bot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keepBots {
		r.bots = append(r.bots, b)
	}
	r.agg.addBot(&b, r.second)
}

func (a *Aggregates) addBot(b *Bot, second func(time.Time) *SecondAgg) {
	o := outcomeName(b.Outcome)
	by := a.Outcomes[b.Behavior]
	if by == nil {
		by = map[string]int64{}
		a.Outcomes[b.Behavior] = by
	}
	by[o]++
	if !b.ArrivedAt.IsZero() {
		second(b.ArrivedAt).Arrivals++
		a.Reaction.Add(b.Reaction)
		if b.Scheduled {
			a.Lag.Add(b.Lag)
		}
	}
	if b.HeldBack {
		a.HeldBack++
	}
	if !b.JoinedAt.IsZero() {
		a.Joined++
		second(b.JoinedAt).Joins++
	}
	if !b.AdmittedAt.IsZero() || !b.AdmittedSeen.IsZero() {
		a.Admitted++
	}
	if !b.AdmittedSeen.IsZero() {
		second(b.AdmittedSeen).Promotions++
	}
	// Promotion latency is push delivery: bots that waited on a stream.
	// Polling bots learn at their next poll (kept apart); bots admitted on
	// join never waited.
	if !b.AdmittedAt.IsZero() && !b.AdmittedSeen.IsZero() && b.PositionAtJoin > 0 {
		if b.Wait == "poll" {
			a.PromotionPoll.Add(b.AdmittedSeen.Sub(b.AdmittedAt))
		} else {
			a.Promotion.Add(b.AdmittedSeen.Sub(b.AdmittedAt))
		}
	}
	if !b.JoinedAt.IsZero() && !b.AdmittedAt.IsZero() {
		a.Wait.Add(b.AdmittedAt.Sub(b.JoinedAt))
	}
	switch b.Outcome {
	case OutcomeBought:
		a.Bought++
	case OutcomeAbandoned:
		a.Abandoned++
	}
	if b.Seq > 0 && b.AdmissionNo > 0 {
		a.FIFO = append(a.FIFO, [2]int64{b.Seq, b.AdmissionNo})
	}
}

// Result is what the recorder holds: the aggregates, and the raw bots and
// requests it was asked to keep (bots by arrival, requests by time).
func (r *Recorder) Result() (Aggregates, []Bot, []Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.agg
	a.Seconds = make([]SecondAgg, 0, len(r.seconds))
	for _, s := range r.seconds {
		a.Seconds = append(a.Seconds, *s)
	}
	slices.SortFunc(a.Seconds, func(x, y SecondAgg) int { return cmp.Compare(x.T, y.T) })
	slices.SortFunc(a.FIFO, func(x, y [2]int64) int { return cmp.Compare(x[0], y[0]) })
	slices.SortStableFunc(r.bots, func(x, y Bot) int { return x.ArrivedAt.Compare(y.ArrivedAt) })
	slices.SortStableFunc(r.requests, func(x, y Request) int { return x.At.Compare(y.At) })
	return a, r.bots, r.requests
}

// aggregate makes the aggregates of a raw run recorded without them.
func aggregate(raw *Raw) Aggregates {
	opens := raw.OpensAt
	if opens.IsZero() {
		opens = raw.Started
	}
	rec := NewRecorder(opens, false, false)
	for i := range raw.Requests {
		rec.Request(raw.Requests[i])
	}
	for i := range raw.Bots {
		rec.Bot(raw.Bots[i])
	}
	a, _, _ := rec.Result()
	return a
}

// merge adds o to a, second by second with o's seconds moved by shift.
func (a *Aggregates) merge(o *Aggregates, shift int64) {
	if a.Steps == nil {
		a.Steps = map[string]*StepAgg{}
	}
	if a.Outcomes == nil {
		a.Outcomes = map[string]map[string]int64{}
	}
	for name, s := range o.Steps {
		st := a.Steps[name]
		if st == nil {
			st = &StepAgg{Codes: map[string]int64{}}
			a.Steps[name] = st
		}
		st.merge(s)
	}
	for beh, by := range o.Outcomes {
		if a.Outcomes[beh] == nil {
			a.Outcomes[beh] = map[string]int64{}
		}
		for k, n := range by {
			a.Outcomes[beh][k] += n
		}
	}
	a.Joined += o.Joined
	a.Admitted += o.Admitted
	a.Abandoned += o.Abandoned
	a.Bought += o.Bought
	a.Planned += o.Planned
	a.HeldBack += o.HeldBack
	a.Promotion.Merge(&o.Promotion)
	a.PromotionPoll.Merge(&o.PromotionPoll)
	a.Wait.Merge(&o.Wait)
	a.Reaction.Merge(&o.Reaction)
	a.Lag.Merge(&o.Lag)
	a.FIFO = append(a.FIFO, o.FIFO...)
	byT := map[int64]int{}
	for i, s := range a.Seconds {
		byT[s.T] = i
	}
	for _, s := range o.Seconds {
		s.T += shift
		i, ok := byT[s.T]
		if !ok {
			byT[s.T] = len(a.Seconds)
			a.Seconds = append(a.Seconds, s)
			continue
		}
		t := &a.Seconds[i]
		t.Planned += s.Planned
		t.Arrivals += s.Arrivals
		t.Joins += s.Joins
		t.Promotions += s.Promotions
		t.Orders += s.Orders
	}
	slices.SortFunc(a.Seconds, func(x, y SecondAgg) int { return cmp.Compare(x.T, y.T) })
}

func (st *StepAgg) merge(o *StepAgg) {
	st.Requests += o.Requests
	st.Success += o.Success
	st.Unexpected += o.Unexpected
	st.Latency.Merge(&o.Latency)
	st.Wait.Merge(&o.Wait)
	for k, n := range o.Codes {
		st.Codes[k] += n
	}
	for _, e := range o.Errors {
		st.Errors = addError(st.Errors, e)
	}
	st.BytesIn += o.BytesIn
	st.BytesOut += o.BytesOut
	if !o.First.IsZero() && (st.First.IsZero() || o.First.Before(st.First)) {
		st.First = o.First
	}
	if o.Last.After(st.Last) {
		st.Last = o.Last
	}
	if o.LastDone.After(st.LastDone) {
		st.LastDone = o.LastDone
	}
}
