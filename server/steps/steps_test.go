package steps_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc/redistest"
	"github.com/rushline/rushline/server/steps"
)

// clock is a settable test clock, safe for concurrent use.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

var fullFlow = []steps.Step{steps.Date, steps.Captcha, steps.Grade, steps.Seat, steps.Confirm, steps.Payment}

// fixture is an engine on a private Redis with one event of 20 seats
// whose flow is flow (the event "plain" has none).
type fixture struct {
	eng *queue.Engine
	svc *steps.Service
	rdb *redis.Client
	clk *clock
	ev  queue.Event
}

func MustFixture(tb testing.TB, flow []steps.Step) *fixture {
	tb.Helper()
	p := redistest.MustStart(tb)
	rdb := redistest.MustClient(tb, p.Addr())
	clk := &clock{t: time.Date(2026, 11, 25, 11, 0, 0, 0, time.UTC)}
	eng := queue.New(rdb, []byte("test-token-key"), queue.WithClock(clk.Now))
	tb.Cleanup(eng.Close)
	f := &fixture{eng: eng, rdb: rdb, clk: clk}
	f.svc = steps.New(eng, rdb, func(_ context.Context, id string) ([]steps.Step, error) {
		if id == "plain" {
			return nil, nil
		}
		return flow, nil
	})
	for _, id := range []string{"ev", "plain"} {
		ev := queue.Event{ID: id, Name: id, Seats: 20, Capacity: 100_000, AdmitBatch: 10, AdmitIntervalMS: 100,
			ActiveTTLS: 60, Policy: queue.PolicyCapacity, CreatedAt: clk.Now()}
		if err := eng.CreateEvent(context.Background(), ev); err != nil {
			tb.Fatal(err)
		}
		if id == "ev" {
			f.ev = ev
		}
	}
	return f
}

// MustAdmit joins user into eventID and returns the token, ACTIVE at once.
func (f *fixture) MustAdmit(tb testing.TB, eventID, user string) string {
	tb.Helper()
	en, _, err := f.eng.Join(context.Background(), eventID, user)
	if err != nil || en.Status != queue.StatusActive {
		tb.Fatalf("join %s: %+v %v, want ACTIVE at once", user, en, err)
	}
	return en.Token
}

// MustCaptcha draws a captcha for token and returns its answer, read from Redis.
func (f *fixture) MustCaptcha(tb testing.TB, token string) string {
	tb.Helper()
	png, err := f.svc.Captcha(context.Background(), f.ev.ID, token)
	if err != nil || len(png) < 100 || string(png[1:4]) != "PNG" {
		tb.Fatalf("captcha: %d bytes, %v", len(png), err)
	}
	en, err := f.eng.Status(context.Background(), f.ev.ID, token)
	if err != nil {
		tb.Fatal(err)
	}
	ans, err := f.rdb.HGet(context.Background(), steps.LogKey(f.ev.ID, en.Seq), "cap").Result()
	if err != nil || len(ans) != steps.CaptchaDigits {
		tb.Fatalf("captcha answer %q: %v", ans, err)
	}
	return ans
}

func MustCode(tb testing.TB, err error, code queue.Code) {
	tb.Helper()
	if got := queue.ErrorCode(err); got != code {
		tb.Fatalf("error %v, want %s", err, code)
	}
}

func me(user string) queue.Actor { return queue.Actor{UserID: user} }

// TestFlowRecordsEachStepOnTheServerClock walks the whole flow: every step
// waits for the one before, takes the time since it on the server's clock,
// the seat is bought only at the last, and the times come back per step.
func TestFlowRecordsEachStepOnTheServerClock(t *testing.T) {
	f := MustFixture(t, fullFlow)
	ctx := context.Background()
	tok := f.MustAdmit(t, f.ev.ID, "u_1")

	_, err := f.svc.Do(ctx, f.ev.ID, tok, steps.Grade, "VIP", me("u_1"))
	MustCode(t, err, queue.CodeStepOutOfOrder)
	_, err = f.svc.Do(ctx, f.ev.ID, tok, steps.Date, "1", me("u_2"))
	MustCode(t, err, queue.CodeTokenOwnerMismatch)

	st, err := f.svc.State(ctx, f.ev.ID, tok)
	if err != nil || st.Next != steps.Date || len(st.Dates) != 3 || len(st.Grades) == 0 {
		t.Fatalf("state %+v %v, want next date, 3 shows and grades", st, err)
	}
	seat := fmt.Sprintf("%s-1", st.Grades[1].FirstRow) // the first seat of the second grade
	values := map[steps.Step]string{steps.Date: "2", steps.Grade: st.Grades[1].ID, steps.Seat: seat, steps.Confirm: "", steps.Payment: "card"}
	for i, step := range fullFlow {
		took := time.Duration(i+1) * 700 * time.Millisecond
		f.clk.Advance(took)
		v := values[step]
		if step == steps.Captcha {
			v = f.MustCaptcha(t, tok)
		}
		r, err := f.svc.Do(ctx, f.ev.ID, tok, step, v, me("u_1"))
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if r.MS != took.Milliseconds() || !r.At.Equal(f.clk.Now()) {
			t.Errorf("%s took %d ms at %s, want %d ms at %s", step, r.MS, r.At, took.Milliseconds(), f.clk.Now())
		}
		if bought := r.Order != nil; bought != (step == steps.Payment) {
			t.Errorf("%s bought %v", step, r.Order)
		}
		if step == steps.Seat {
			en, _ := f.eng.Status(ctx, f.ev.ID, tok)
			if en.Status != queue.StatusActive {
				t.Errorf("after the pick the token is %s, want still ACTIVE (held, not bought)", en.Status)
			}
		}
	}
	en, err := f.eng.Status(ctx, f.ev.ID, tok)
	if err != nil || en.Status != queue.StatusDone {
		t.Fatalf("after payment: %+v %v, want DONE", en, err)
	}
	// Paying again answers the recorded step, and sells nothing twice.
	r, err := f.svc.Do(ctx, f.ev.ID, tok, steps.Payment, "card", me("u_1"))
	if err != nil || r.Order != nil || r.MS != 6*700 {
		t.Errorf("payment again: %+v %v, want the first answer without an order", r, err)
	}
	tm, err := f.svc.Times(ctx, f.ev.ID, tok)
	if err != nil {
		t.Fatal(err)
	}
	if tm.TotalMS == nil || *tm.TotalMS != 21*700 || tm.Seat != seat || tm.Grade != "R" || tm.Price != 143_000 {
		t.Errorf("times %+v, want 14.7 s in all for seat %s of grade R", tm, seat)
	}
	if tm.PeopleTotalMS == nil || *tm.PeopleTotalMS != 21*700 || tm.CrowdMS != nil {
		t.Errorf("times %+v, want the people's total (only this one) and no crowd", tm)
	}
	for i, x := range tm.Steps {
		if x.YouMS == nil || *x.YouMS != int64(i+1)*700 || x.People != 1 || x.PeopleMS == nil {
			t.Errorf("step %s: %+v", x.Step, x)
		}
	}
}

// TestCaptchaWrongAnswerCostsTheImage: a wrong answer fails and uses the
// image up, so the right answer to it fails too; a new image takes its own.
func TestCaptchaWrongAnswerCostsTheImage(t *testing.T) {
	f := MustFixture(t, []steps.Step{steps.Captcha, steps.Seat, steps.Confirm})
	ctx := context.Background()
	tok := f.MustAdmit(t, f.ev.ID, "u_1")
	_, err := f.svc.Do(ctx, f.ev.ID, tok, steps.Captcha, "123456", me("u_1"))
	MustCode(t, err, queue.CodeCaptchaWrong) // no image asked for yet
	ans := f.MustCaptcha(t, tok)
	wrong := "000000"
	if ans == wrong {
		wrong = "111111"
	}
	_, err = f.svc.Do(ctx, f.ev.ID, tok, steps.Captcha, wrong, me("u_1"))
	MustCode(t, err, queue.CodeCaptchaWrong)
	_, err = f.svc.Do(ctx, f.ev.ID, tok, steps.Captcha, ans, me("u_1"))
	MustCode(t, err, queue.CodeCaptchaWrong)
	older := f.MustCaptcha(t, tok)
	ans = f.MustCaptcha(t, tok) // a newer image replaces the older one
	if older != ans {
		_, err = f.svc.Do(ctx, f.ev.ID, tok, steps.Captcha, older, me("u_1"))
		MustCode(t, err, queue.CodeCaptchaWrong)
		ans = f.MustCaptcha(t, tok)
	}
	if _, err := f.svc.Do(ctx, f.ev.ID, tok, steps.Captcha, ans, me("u_1")); err != nil {
		t.Fatalf("the right answer: %v", err)
	}
}

// TestHoldBindsWhileActive: a held seat can be neither picked nor bought by
// anyone else (through the steps or API.md's order call) until the holder's
// pass expires, when it is free again.
func TestHoldBindsWhileActive(t *testing.T) {
	f := MustFixture(t, []steps.Step{steps.Seat, steps.Confirm})
	ctx := context.Background()
	a := f.MustAdmit(t, f.ev.ID, "u_a")
	if _, err := f.svc.Do(ctx, f.ev.ID, a, steps.Seat, "A-1", me("u_a")); err != nil {
		t.Fatal(err)
	}
	b := f.MustAdmit(t, f.ev.ID, "u_b")
	_, err := f.svc.Do(ctx, f.ev.ID, b, steps.Seat, "A-1", me("u_b"))
	MustCode(t, err, queue.CodeSeatTaken)
	_, err = f.eng.Order(ctx, f.ev, b, "A-1", me("u_b"))
	MustCode(t, err, queue.CodeSeatTaken)
	seats, err := f.svc.Seats(ctx, f.ev.ID, b, "VIP")
	if err != nil || seats[0].ID != "A-1" || !seats[0].Taken {
		t.Fatalf("b's map %+v %v, want A-1 taken", seats, err)
	}
	// The holder's own order call buys it.
	c := f.MustAdmit(t, f.ev.ID, "u_c")
	if _, err := f.svc.Do(ctx, f.ev.ID, c, steps.Seat, "A-2", me("u_c")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.eng.Order(ctx, f.ev, c, "A-2", me("u_c")); err != nil {
		t.Fatalf("the holder's order: %v", err)
	}

	f.clk.Advance(61 * time.Second)
	if _, err := f.eng.Expire(ctx, f.ev.ID, "r1", time.Minute); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.Do(ctx, f.ev.ID, a, steps.Confirm, "", me("u_a"))
	MustCode(t, err, queue.CodeNotActive)
	d := f.MustAdmit(t, f.ev.ID, "u_d")
	if _, err := f.svc.Do(ctx, f.ev.ID, d, steps.Seat, "A-1", me("u_d")); err != nil {
		t.Fatalf("the expired hold's seat: %v", err)
	}
}

// TestEndedAttemptsFreeTheirHolds: a hold leaves the queue's hd hash when
// its attempt ends (expired, left, or bought another seat by the order
// call), so the seat map and the grade counts show the seat free again and
// hd does not grow with every pass that ran out.
func TestEndedAttemptsFreeTheirHolds(t *testing.T) {
	f := MustFixture(t, []steps.Step{steps.Seat, steps.Confirm})
	ctx := context.Background()
	hold := func(user, seat string) string {
		t.Helper()
		tok := f.MustAdmit(t, f.ev.ID, user)
		if _, err := f.svc.Do(ctx, f.ev.ID, tok, steps.Seat, seat, me(user)); err != nil {
			t.Fatalf("%s holds %s: %v", user, seat, err)
		}
		return tok
	}
	holds := func() map[string]string {
		t.Helper()
		m, err := f.rdb.HGetAll(ctx, queue.EventKey(f.ev.ID, "hd")).Result()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	late := hold("u_late", "A-1")
	gone := hold("u_gone", "A-2")
	other := hold("u_other", "A-3")
	if h := holds(); len(h) != 3 {
		t.Fatalf("hd %v, want the 3 holds", h)
	}
	if _, err := f.eng.Leave(ctx, f.ev.ID, gone, me("u_gone")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.eng.Order(ctx, f.ev, other, "A-4", me("u_other")); err != nil {
		t.Fatal(err)
	}
	if h := holds(); len(h) != 1 || h["A-1"] == "" {
		t.Fatalf("hd %v after a leave and an order elsewhere, want only A-1's hold", h)
	}
	watcher := f.MustAdmit(t, f.ev.ID, "u_watch")
	free := func() int {
		t.Helper()
		st, err := f.svc.State(ctx, f.ev.ID, watcher)
		if err != nil {
			t.Fatal(err)
		}
		return st.Grades[0].Free
	}
	before := free()
	f.clk.Advance(61 * time.Second)
	if _, err := f.eng.Expire(ctx, f.ev.ID, "r1", time.Minute); err != nil {
		t.Fatal(err)
	}
	if h := holds(); len(h) != 0 {
		t.Fatalf("hd %v after u_late's pass expired, want empty", h)
	}
	if n, _ := f.rdb.HLen(ctx, queue.EventKey(f.ev.ID, "hu")).Result(); n != 0 {
		t.Fatalf("hu holds %d entries, want none", n)
	}
	_, err := f.svc.Do(ctx, f.ev.ID, late, steps.Confirm, "", me("u_late"))
	MustCode(t, err, queue.CodeNotActive)
	// The watcher's pass ran out with the others': a new one sees A-1 free.
	watcher = f.MustAdmit(t, f.ev.ID, "u_watch2")
	if got := free(); got != before+1 {
		t.Errorf("the first grade has %d free seats after the expiry, want %d (A-1 free again)", got, before+1)
	}
	seats, err := f.svc.Seats(ctx, f.ev.ID, watcher, "VIP")
	if err != nil || seats[0].ID != "A-1" || seats[0].Taken {
		t.Fatalf("map %+v %v, want A-1 free", seats, err)
	}
}

// TestEventWithoutSteps: steps are opt-in; an event without them refuses
// them and sells through API.md's order call as before.
func TestEventWithoutSteps(t *testing.T) {
	f := MustFixture(t, fullFlow)
	ctx := context.Background()
	tok := f.MustAdmit(t, "plain", "u_1")
	_, err := f.svc.Do(ctx, "plain", tok, steps.Date, "1", me("u_1"))
	MustCode(t, err, queue.CodeStepOutOfOrder)
	_, err = f.svc.State(ctx, "plain", tok)
	MustCode(t, err, queue.CodeStepOutOfOrder)
	ev, _ := f.eng.Event(ctx, "plain")
	if _, err := f.eng.Order(ctx, ev, tok, "A-1", me("u_1")); err != nil {
		t.Fatal(err)
	}
}

// TestBadValues: a value the event does not offer is refused.
func TestBadValues(t *testing.T) {
	f := MustFixture(t, fullFlow)
	ctx := context.Background()
	tok := f.MustAdmit(t, f.ev.ID, "u_1")
	for _, tc := range []struct {
		name  string
		step  steps.Step
		value string
		code  queue.Code
	}{
		// a show the event does not have
		{"unknown show", steps.Date, "9", queue.CodeBadRequest},
		// a grade that does not exist
		{"unknown grade", steps.Grade, "Z", queue.CodeBadRequest},
		// a seat outside the map
		{"unknown seat", steps.Seat, "Z-99", queue.CodeSeatNotFound},
		// a step no flow has
		{"unknown step", "dance", "", queue.CodeStepOutOfOrder},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.svc.Do(ctx, f.ev.ID, tok, tc.step, tc.value, me("u_1"))
			MustCode(t, err, tc.code)
		})
	}
}

// TestHammerPickAndBuy: many attempts race for a few seats through the
// steps and the plain order call at once; no seat is held by two live
// attempts' purchases, and none is sold twice.
func TestHammerPickAndBuy(t *testing.T) {
	f := MustFixture(t, []steps.Step{steps.Seat, steps.Confirm})
	ctx := context.Background()
	const n = 60
	toks := make([]string, n)
	for i := range toks {
		toks[i] = f.MustAdmit(t, f.ev.ID, fmt.Sprintf("u_%d", i))
	}
	var sold atomic.Int64
	var wg sync.WaitGroup
	bought := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			user := fmt.Sprintf("u_%d", i)
			seat := fmt.Sprintf("A-%d", i%3+1)
			if i%2 == 0 { // API.md's one call
				if o, err := f.eng.Order(ctx, f.ev, toks[i], seat, me(user)); err == nil {
					bought[i] = o.Seat
					sold.Add(1)
				}
				return
			}
			if _, err := f.svc.Do(ctx, f.ev.ID, toks[i], steps.Seat, seat, me(user)); err != nil {
				return
			}
			if r, err := f.svc.Do(ctx, f.ev.ID, toks[i], steps.Confirm, "", me(user)); err == nil && r.Order != nil {
				bought[i] = r.Order.Seat
				sold.Add(1)
			}
		}()
	}
	wg.Wait()
	seen := map[string]int{}
	for _, s := range bought {
		if s != "" {
			seen[s]++
		}
	}
	for s, k := range seen {
		if k > 1 {
			t.Errorf("seat %s sold %d times", s, k)
		}
	}
	taken, _ := f.rdb.HLen(ctx, queue.EventKey(f.ev.ID, "st")).Result()
	if sold.Load() != taken || taken > 3 || taken == 0 {
		t.Errorf("%d sold by the callers, %d in the map, want the same, 1 to 3", sold.Load(), taken)
	}
}

// TestCaptchaDrill: the drill is timed on the server from its image to the
// right answer, takes one answer, belongs to its user, and ranks against
// the drills before it.
func TestCaptchaDrill(t *testing.T) {
	f := MustFixture(t, nil)
	ctx := context.Background()
	answer := func(id string) string {
		a, err := f.rdb.HGet(ctx, "rl:{drill}:cap:"+id, "a").Result()
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	var last steps.DrillResult
	for i, took := range []time.Duration{3 * time.Second, time.Second, 2 * time.Second} {
		d, err := f.svc.NewDrill(ctx, "u_1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.DrillImage(ctx, d.ID, "u_2"); queue.ErrorCode(err) != queue.CodeNotFound {
			t.Errorf("another user's image: %v", err)
		}
		png, err := f.svc.DrillImage(ctx, d.ID, "u_1")
		if err != nil || len(png) < 100 {
			t.Fatalf("image: %v", err)
		}
		f.clk.Advance(took)
		if last, err = f.svc.AnswerDrill(ctx, d.ID, "u_1", answer(d.ID)); err != nil {
			t.Fatalf("drill %d: %v", i, err)
		}
		if last.MS != took.Milliseconds() || last.People != int64(i+1) {
			t.Errorf("drill %d: %+v, want %d ms among %d", i, last, took.Milliseconds(), i+1)
		}
		_, err = f.svc.AnswerDrill(ctx, d.ID, "u_1", "000000")
		MustCode(t, err, queue.CodeNotFound) // one answer each
	}
	if last.Percentile != 50 { // 2 s: one of the two others was slower
		t.Errorf("percentile %v, want 50", last.Percentile)
	}
	d, _ := f.svc.NewDrill(ctx, "u_1")
	if _, err := f.svc.DrillImage(ctx, d.ID, "u_1"); err != nil {
		t.Fatal(err)
	}
	wrong := "000000"
	if answer(d.ID) == wrong {
		wrong = "111111"
	}
	_, err := f.svc.AnswerDrill(ctx, d.ID, "u_1", wrong)
	MustCode(t, err, queue.CodeCaptchaWrong)
}

// BenchmarkStep is one order step through the service: the event, the
// token's status and the step script (its Redis time is O(1)).
func BenchmarkStep(b *testing.B) {
	f := MustFixture(b, []steps.Step{steps.Date, steps.Seat, steps.Confirm})
	ctx := context.Background()
	toks := make([]string, b.N)
	for i := range toks {
		toks[i] = f.MustAdmit(b, f.ev.ID, fmt.Sprintf("u_%d", i))
	}
	b.ResetTimer()
	for i := range b.N {
		if _, err := f.svc.Do(ctx, f.ev.ID, toks[i], steps.Date, "1", me(fmt.Sprintf("u_%d", i))); err != nil {
			b.Fatal(err)
		}
	}
}

// TestTimesReportTheCrowd: with a crowd, Times carries its median and p90
// per step and from admission to purchase, beside the person's.
func TestTimesReportTheCrowd(t *testing.T) {
	p := redistest.MustStart(t)
	rdb := redistest.MustClient(t, p.Addr())
	eng := queue.New(rdb, []byte("k"))
	t.Cleanup(eng.Close)
	ctx := context.Background()
	if err := eng.CreateEvent(ctx, queue.Event{ID: "c", Name: "c", Seats: 5, Capacity: 5, AdmitBatch: 5, AdmitIntervalMS: 100,
		ActiveTTLS: 60, Policy: queue.PolicyCapacity, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	svc := steps.New(eng, rdb, func(context.Context, string) ([]steps.Step, error) {
		return []steps.Step{steps.Seat, steps.Confirm}, nil
	}, steps.WithCrowd(func(context.Context, string) (map[string]steps.CrowdTime, bool, error) {
		return map[string]steps.CrowdTime{
			"seat":           {P50: 1800 * time.Millisecond, P90: 4 * time.Second, N: 7},
			steps.CrowdTotal: {P50: 2500 * time.Millisecond, P90: 6 * time.Second, N: 7},
		}, true, nil
	}))
	en, _, err := eng.Join(ctx, "c", "u_1")
	if err != nil {
		t.Fatal(err)
	}
	tm, err := svc.Times(ctx, "c", en.Token)
	if err != nil || tm.CrowdMS == nil || *tm.CrowdMS != 2500 || *tm.CrowdP90MS != 6000 || tm.TotalMS != nil {
		t.Fatalf("times %+v %v, want the crowd's 2.5 s / 6 s and no total yet", tm, err)
	}
	seat, confirm := tm.Steps[0], tm.Steps[1]
	if seat.CrowdP50MS == nil || *seat.CrowdP50MS != 1800 || *seat.CrowdP90MS != 4000 || seat.Crowd != 7 {
		t.Errorf("seat %+v, want the crowd's 1.8 s / 4 s over 7", seat)
	}
	if confirm.CrowdP50MS != nil || confirm.Crowd != 0 {
		t.Errorf("confirm %+v, want no crowd figure (none given)", confirm)
	}
}

// TestBigGradesComeInBlocks: a grade over queue.MaxSeatList seats is split
// into blocks of whole rows, each a map of its own; every seat is in one.
func TestBigGradesComeInBlocks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		seats  int
		blocks int
	}{
		// one block per grade
		{"small", 500, 4},
		// 100,000 seats: VIP 20,000 and A 20,000 in 2 blocks, R and S 30,000 in 3
		{"large", 100_000, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gs := steps.Layout(tc.seats)
			total := 0
			for _, g := range gs {
				total += g.Seats
				if g.Seats > queue.MaxSeatList {
					t.Errorf("%s has %d seats", g.ID, g.Seats)
				}
			}
			if len(gs) != tc.blocks || total != tc.seats {
				t.Errorf("%d blocks with %d seats, want %d with %d", len(gs), total, tc.blocks, tc.seats)
			}
		})
	}
}

// BenchmarkExpireHolds times one expiry sweep call (queue.DefaultChunk
// passes) when every expiring pass holds a seat, which the sweep frees.
func BenchmarkExpireHolds(b *testing.B) {
	f := MustFixture(b, []steps.Step{steps.Seat, steps.Confirm})
	ctx := context.Background()
	ev := queue.Event{ID: "big", Name: "big", Seats: 2 * queue.DefaultChunk, Capacity: 100_000, AdmitBatch: 10,
		AdmitIntervalMS: 100, ActiveTTLS: 60, Policy: queue.PolicyCapacity, CreatedAt: f.clk.Now()}
	if err := f.eng.CreateEvent(ctx, ev); err != nil {
		b.Fatal(err)
	}
	var took time.Duration
	for i := range b.N {
		for k := range queue.DefaultChunk {
			user := fmt.Sprintf("u_%d_%d", i, k)
			tok := f.MustAdmit(b, ev.ID, user)
			if _, err := f.svc.Do(ctx, ev.ID, tok, steps.Seat, queue.SeatID(ev.Seats, k), me(user)); err != nil {
				b.Fatal(err)
			}
		}
		f.clk.Advance(61 * time.Second)
		f.rdb.ConfigResetStat(ctx)
		r, err := f.eng.Expire(ctx, ev.ID, "r1", time.Minute)
		if err != nil || r.Expired != queue.DefaultChunk {
			b.Fatalf("expired %d, %v", r.Expired, err)
		}
		took += maxScriptTime(b, f.rdb)
		if n, _ := f.rdb.HLen(ctx, queue.EventKey(ev.ID, "hd")).Result(); n != 0 {
			b.Fatalf("%d holds left", n)
		}
	}
	b.ReportMetric(float64(took.Microseconds())/float64(b.N), "redis-µs/sweep")
}

// maxScriptTime reads Redis's time in scripts since the stats were reset
// (the sweep's calls: the one that expires, then one that finds none).
func maxScriptTime(tb testing.TB, rdb *redis.Client) time.Duration {
	tb.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	var total time.Duration
	for _, line := range strings.Split(info, "\n") {
		if !strings.HasPrefix(line, "cmdstat_evalsha:") && !strings.HasPrefix(line, "cmdstat_eval:") {
			continue
		}
		for _, kv := range strings.Split(strings.TrimSpace(line[strings.Index(line, ":")+1:]), ",") {
			if us, ok := strings.CutPrefix(kv, "usec="); ok {
				n, _ := strconv.Atoi(us)
				total += time.Duration(n) * time.Microsecond
			}
		}
	}
	return total
}
