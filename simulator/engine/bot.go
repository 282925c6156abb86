package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/rushline/rushline/internal/ctxsleep"
	"github.com/rushline/rushline/internal/fair"
	"github.com/rushline/rushline/simulator/report"
	"github.com/rushline/rushline/simulator/scenario"
	"github.com/rushline/rushline/simulator/sse"
)

// errAbandon ends a wait whose patience ran out.
var errAbandon = errors.New("patience ran out")

// bot walks one simulated user through the queue, records the journey and
// returns its outcome.
//
// planned is a scheduled bot's planned arrival (zero in a closed phase). A
// bot that waits by stream first takes a slot at the run's gate, waiting for
// one when the process holds all it can; its arrival (and lag) counts from
// when it got one.
func (r *run) bot(ctx context.Context, index int, ph *scenario.Phase, planned time.Time) (outcome string) {
	rng := r.rng(index)
	beh := r.sc.PickBot(rng)
	b := report.Bot{ID: r.tag + "-" + strconv.Itoa(index), Behavior: beh.Name, Phase: ph.Name, Wait: beh.Wait,
		Reaction: beh.Reaction.Sample(rng)}
	patience, think := beh.Patience.Sample(rng), beh.Think.Sample(rng)
	defer func() {
		b.FinishedAt = time.Now()
		if b.Outcome == "" {
			b.Outcome = report.OutcomeCancelled
		}
		outcome = b.Outcome
		r.done.Add(1)
		r.rec.Bot(b)
	}()
	leave := func() {}
	if beh.Wait != scenario.WaitPoll {
		held, ok := r.gate.enter(ctx)
		b.HeldBack = held
		if !ok {
			return
		}
		once := sync.OnceFunc(r.gate.leave)
		leave = once
		defer once()
	}
	b.ArrivedAt = time.Now()
	if !planned.IsZero() {
		b.Scheduled, b.Lag = true, b.ArrivedAt.Sub(planned)
	}
	r.arrived.Add(1)
	fail := func(err error) {
		if ctx.Err() != nil {
			b.Outcome = report.OutcomeCancelled
			return
		}
		b.Outcome, b.Error = report.OutcomeFailed, err.Error()
	}
	if !ctxsleep.Until(ctx, b.ArrivedAt.Add(b.Reaction)) {
		return
	}

	var en entry
	body := map[string]string{"user_type": "VIRTUAL", "bot_id": b.ID}
	if r.event.Challenge == "pow" {
		if err := r.proveWork(ctx, body); err != nil {
			fail(err)
			return
		}
	}
	err := r.api.do(ctx, "join", "POST", "/api/v1/events/"+r.event.ID+"/queue", r.api.sim(), body, &en)
	if err != nil {
		fail(err)
		return
	}
	b.JoinedAt, b.Seq, b.PositionAtJoin = time.Now(), en.Seq, en.Position
	r.joined.Add(1)
	if en.Status != "ACTIVE" {
		r.waiting.Add(1)
		var deadline time.Time
		if patience > 0 {
			deadline = b.JoinedAt.Add(patience)
		}
		en, err = r.wait(ctx, beh, en.Token, deadline)
		r.waiting.Add(-1)
		leave() // the stream is closed: another bot may have its slot
		switch {
		case errors.Is(err, errAbandon):
			b.Outcome = report.OutcomeAbandoned
			lctx, cancel := detached(ctx)
			defer cancel()
			h, _ := r.api.call(lctx, "leave", "DELETE", "/api/v1/events/"+r.event.ID+"/queue/"+en.Token, r.api.sim(), nil, nil)
			b.LeftActive = h.Get("X-Queue-Status") == "ACTIVE"
			return
		case err != nil:
			fail(err)
			return
		}
		if en.Status == "EXPIRED" {
			b.Outcome = report.OutcomeExpired
			return
		}
		if en.Status != "ACTIVE" {
			fail(fmt.Errorf("wait ended in %s", en.Status))
			return
		}
	} else {
		en.AdmittedAt = time.Now()
	}
	leave() // done with streams: another bot may have the slot
	b.AdmittedAt, b.AdmittedSeen, b.AdmissionNo = en.AdmittedAt, time.Now(), en.AdmissionNo
	r.active.Add(1)
	defer r.active.Add(-1)
	if !ctxsleep.Until(ctx, time.Now().Add(think)) {
		return
	}
	r.buy(ctx, rng, beh, en.Token, &b)
	if b.Outcome == report.OutcomeSoldOut || b.Outcome == report.OutcomeOutbid {
		// Like a person closing the page: give the active slot back at once
		// instead of holding it until the window expires.
		lctx, cancel := detached(ctx)
		defer cancel()
		_ = r.api.do(lctx, "leave", "DELETE", "/api/v1/events/"+r.event.ID+"/queue/"+en.Token, r.api.sim(), nil, nil)
	}
	return // the deferred record sets outcome
}

// proveWork fetches the event's proof-of-work challenge and solves it as a
// person's browser would, adding both to the join body: what the challenge
// costs a bot farm shows in the bots' join times (the simulator key would
// let them skip it).
func (r *run) proveWork(ctx context.Context, body map[string]string) error {
	var c struct {
		Challenge string `json:"challenge"`
		Bits      int    `json:"bits"`
	}
	if err := r.api.do(ctx, "challenge", "GET", "/api/v1/events/"+r.event.ID+"/challenge", nil, nil, &c); err != nil {
		return err
	}
	solution, _, err := fair.SolvePow(ctx, c.Challenge, c.Bits)
	if err != nil {
		return err
	}
	body["challenge"], body["solution"] = c.Challenge, solution
	return nil
}

// wait waits for admission the bot's way: polling, or on a stream.
func (r *run) wait(ctx context.Context, beh *scenario.Bot, token string, deadline time.Time) (entry, error) {
	if beh.Wait == scenario.WaitPoll {
		return r.poll(ctx, token, time.Duration(beh.PollInterval), deadline)
	}
	return r.stream(ctx, token, deadline)
}

// poll waits for admission by asking for the token's status every interval.
func (r *run) poll(ctx context.Context, token string, every time.Duration, deadline time.Time) (entry, error) {
	en := entry{Token: token}
	for {
		wait := every
		if !deadline.IsZero() {
			if left := time.Until(deadline); left <= 0 {
				return en, errAbandon
			} else if left < wait {
				wait = left
			}
		}
		if !ctxsleep.Until(ctx, time.Now().Add(wait)) {
			return en, ctx.Err()
		}
		var st entry
		if err := r.api.do(ctx, "status", "GET", "/api/v1/events/"+r.event.ID+"/queue/"+token, nil, nil, &st); err != nil {
			var ae *apiError
			if errors.As(err, &ae) && ae.HTTP < 500 {
				return en, err
			}
			continue // a 503 or a dropped connection: ask again
		}
		st.Token = token
		if st.Status != "WAITING" {
			return st, nil
		}
	}
}

// stream waits for admission on the token's SSE stream, reconnecting with
// Last-Event-ID when it breaks.
func (r *run) stream(ctx context.Context, token string, deadline time.Time) (entry, error) {
	en := entry{Token: token}
	waitCtx := ctx
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	url := r.api.base + "/api/v1/events/" + r.event.ID + "/queue/" + token + "/stream"
	lastID := ""
	for attempt := 0; ; attempt++ {
		start := time.Now()
		var s *sse.Stream
		var err error
		shallow(func() { s, err = sse.Dial(waitCtx, url, lastID) })
		rec := report.Request{Step: "stream", At: start, Latency: time.Since(start), Code: 200}
		if err != nil {
			var se *sse.StatusError
			if errors.As(err, &se) {
				rec.Code = se.Code
			} else {
				rec.Code, rec.Error = 0, err.Error()
			}
		}
		if waitCtx.Err() == nil || err == nil {
			r.rec.Request(rec)
		}
		if err == nil {
			en, err = r.follow(s, en)
			s.Close()
			lastID = s.LastID
			if err == nil {
				return en, nil
			}
		}
		switch {
		case ctx.Err() != nil:
			return en, ctx.Err()
		case waitCtx.Err() != nil:
			return en, errAbandon
		case attempt >= streamRetries:
			return en, fmt.Errorf("stream: %w", err)
		}
		ctxsleep.Until(waitCtx, time.Now().Add(time.Duration(attempt+1)*200*time.Millisecond))
	}
}

// follow reads one stream until the message that ends the wait.
func (r *run) follow(s *sse.Stream, en entry) (entry, error) {
	for {
		m, err := s.Next()
		if err != nil {
			return en, err
		}
		switch m.Event {
		case "admitted":
			var d struct {
				AdmittedAt  time.Time `json:"admitted_at"`
				AdmissionNo int64     `json:"admission_no"`
			}
			if err := json.Unmarshal([]byte(m.Data), &d); err != nil {
				return en, err
			}
			en.Status, en.AdmittedAt, en.AdmissionNo = "ACTIVE", d.AdmittedAt, d.AdmissionNo
			return en, nil
		case "expired":
			en.Status = "EXPIRED"
			return en, nil
		case "closed":
			var d struct{ Status string }
			_ = json.Unmarshal([]byte(m.Data), &d)
			en.Status = d.Status
			return en, nil
		}
	}
}

// seatsAnswer is the seat map.
type seatsAnswer struct {
	Seats []struct {
		ID    string `json:"id"`
		Taken bool   `json:"taken"`
	} `json:"seats"`
}

// buy reads the seat map and orders a seat the bot's way, retrying on SEAT_TAKEN.
func (r *run) buy(ctx context.Context, rng *mrand.Rand, beh *scenario.Bot, token string, b *report.Bot) {
	want := ""
	if beh.Seat == scenario.SeatFixed {
		want = beh.SeatID
	}
	for try := 0; ; try++ {
		var m seatsAnswer
		err := r.api.do(ctx, "seats", "GET", "/api/v1/events/"+r.event.ID+"/seats", map[string]string{"X-Queue-Token": token}, nil, &m)
		if r.ended(ctx, err, b) {
			return
		}
		seat := pick(rng, beh.Seat, want, m)
		if seat == "" {
			b.Outcome = report.OutcomeSoldOut
			return
		}
		var o struct {
			Seat string `json:"seat"`
		}
		err = r.api.do(ctx, "order", "POST", "/api/v1/events/"+r.event.ID+"/orders", r.api.sim(),
			map[string]string{"token": token, "seat": seat}, &o)
		var ae *apiError
		switch {
		case err == nil:
			b.Outcome, b.Seat = report.OutcomeBought, o.Seat
			return
		case errors.As(err, &ae) && ae.Code == "SEAT_TAKEN" && try < beh.RetryOnTaken:
			b.SeatTaken++
			want = ""
		case errors.As(err, &ae) && ae.Code == "SEAT_TAKEN":
			b.SeatTaken++
			b.Outcome = report.OutcomeOutbid
			return
		case r.ended(ctx, err, b):
			return
		}
	}
}

// ended sorts an error that ends a purchase into the bot's outcome.
func (r *run) ended(ctx context.Context, err error, b *report.Bot) bool {
	if err == nil {
		return false
	}
	var ae *apiError
	switch {
	case ctx.Err() != nil:
		b.Outcome = report.OutcomeCancelled
	case errors.As(err, &ae) && ae.Code == "SOLD_OUT":
		b.Outcome = report.OutcomeSoldOut
	case errors.As(err, &ae) && ae.Code == "NOT_ACTIVE" && ae.Status == "EXPIRED":
		b.Outcome = report.OutcomeExpired
	default:
		b.Outcome, b.Error = report.OutcomeFailed, err.Error()
	}
	return true
}

// pick chooses a free seat: want if free, else the first free (best) or a
// uniformly random free one; "" when none is free.
func pick(rng *mrand.Rand, how, want string, m seatsAnswer) string {
	var free []string
	for _, s := range m.Seats {
		if !s.Taken {
			if s.ID == want {
				return want
			}
			free = append(free, s.ID)
		}
	}
	switch {
	case len(free) == 0:
		return ""
	case how == scenario.SeatRandom:
		return free[rng.IntN(len(free))]
	}
	return free[0]
}
