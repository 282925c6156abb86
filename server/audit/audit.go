// Package audit writes the SQL audit trail behind the queue: it tails every
// event's Redis stream through a consumer group and writes the records to the
// database in batches. The hot path never waits on SQL; while SQL is away the
// records wait in the stream (bounded by the stream's MAXLEN, 1,000,000 per
// event by default) and are written once it is back.
package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/rushline/rushline/internal/ctxsleep"
	"github.com/rushline/rushline/server/queue"
)

// Defaults for a Worker.
const (
	// DefaultGroup is the consumer group name on every event stream.
	DefaultGroup = "audit"
	// DefaultBatch is the most records read and written in one go.
	DefaultBatch = 2000
	// DefaultIdle is the pause between rounds that found nothing.
	DefaultIdle = 200 * time.Millisecond
	// DefaultLinger is the pause after a round that found records but no
	// full batch, so that the next round writes many at once: per-round
	// costs (stream reads, acks, a transaction) dominate small batches.
	DefaultLinger = 100 * time.Millisecond
	// DefaultClaimAfter is how long a record may sit unacknowledged with
	// another replica before this one takes it over.
	DefaultClaimAfter = 30 * time.Second
	// DefaultKeep is how long written records stay in the stream for late
	// readers (push tails) before they are trimmed.
	DefaultKeep = 5 * time.Minute
	// trimEvery is how often each event's stream is trimmed.
	trimEvery = 10 * time.Second
)

// Writer stores records durably; store.Store implements it. It must be
// idempotent: a record may be written twice after a crash. It returns the
// orders it kept aside instead of recording them as sold (see queue.Conflict).
type Writer interface {
	WriteRecords(ctx context.Context, recs []queue.Record) ([]queue.Conflict, error)
}

// Observer learns of the orders the writer kept aside, e.g. to count them.
type Observer interface {
	Conflict(c queue.Conflict)
}

// Option configures a Worker.
type Option func(*Worker)

// WithObserver reports every order kept aside to o.
func WithObserver(o Observer) Option { return func(w *Worker) { w.obs = o } }

// Worker copies stream records to SQL. Run one per replica; the consumer
// group shares the work. Not safe for concurrent Run calls.
type Worker struct {
	src      *queue.Engine
	dst      Writer
	consumer string
	log      *slog.Logger
	groups   map[string]bool
	claimed  time.Time
	trimmed  time.Time
	keep     time.Duration
	obs      Observer
}

// New returns a worker named consumer (unique per replica).
func New(src *queue.Engine, dst Writer, consumer string, log *slog.Logger, opts ...Option) *Worker {
	if log == nil {
		log = slog.Default()
	}
	w := &Worker{src: src, dst: dst, consumer: consumer, log: log, groups: map[string]bool{}, keep: DefaultKeep}
	for _, o := range opts {
		o(w)
	}
	return w
}

// Keep sets how long written records stay in the stream before trimming.
func (w *Worker) Keep(d time.Duration) { w.keep = d }

// Run copies records until ctx ends. It pauses DefaultIdle after a round
// that found nothing or failed, DefaultLinger after one that found no full
// batch, and goes straight on while a backlog fills whole batches.
func (w *Worker) Run(ctx context.Context) {
	failing := false
	for ctx.Err() == nil {
		n, full, err := w.round(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			if !failing {
				w.log.Warn("audit: write behind failed; records stay in the stream until it works", "err", err)
			}
			failing = true
		case err == nil && failing:
			w.log.Info("audit: write behind recovered")
			failing = false
		}
		var pause time.Duration
		switch {
		case n == 0 || err != nil:
			pause = DefaultIdle
		case !full:
			pause = DefaultLinger
		}
		ctxsleep.Sleep(ctx, pause)
	}
}

// Round copies at most one batch per event and returns how many records it wrote.
func (w *Worker) Round(ctx context.Context) (int, error) {
	n, _, err := w.round(ctx)
	return n, err
}

// round is Round, also reporting whether some event filled a whole batch
// (more may be waiting).
func (w *Worker) round(ctx context.Context) (total int, full bool, err error) {
	ids, err := w.src.EventIDs(ctx)
	if err != nil {
		return 0, false, err
	}
	claim := time.Since(w.claimed) > DefaultClaimAfter/3
	if claim {
		w.claimed = time.Now()
	}
	trim := time.Since(w.trimmed) > trimEvery
	if trim {
		w.trimmed = time.Now()
	}
	var errs []error
	for _, id := range ids {
		n, read, err := w.event(ctx, id, claim, trim)
		if err != nil && lostGroup(err) {
			// Redis lost the stream and its group (a restart without
			// persistence, a restore): make the group again and go on.
			delete(w.groups, id)
			n, read, err = w.event(ctx, id, claim, trim)
		}
		total += n
		full = full || read >= DefaultBatch
		if err != nil {
			// Whatever failed, make sure of the group again next round.
			delete(w.groups, id)
			errs = append(errs, fmt.Errorf("audit %s: %w", id, err)) // the other events go on
		}
	}
	return total, full, errors.Join(errs...)
}

// lostGroup reports whether err says the stream or its group is gone.
func lostGroup(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "NOGROUP") || strings.Contains(msg, "no such key")
}

// event copies at most one batch of one event's records and returns how many
// it wrote and how many it read.
func (w *Worker) event(ctx context.Context, id string, claim, trim bool) (written, read int, err error) {
	if !w.groups[id] {
		if err := w.src.EnsureGroup(ctx, id, DefaultGroup); err != nil {
			return 0, 0, err
		}
		w.groups[id] = true
	}
	if claim {
		if _, err := w.src.Claim(ctx, id, DefaultGroup, w.consumer, DefaultClaimAfter, DefaultBatch); err != nil {
			return 0, 0, err
		}
	}
	if trim {
		if _, err := w.src.Trim(ctx, id, DefaultGroup, w.keep); err != nil {
			return 0, 0, err
		}
	}
	recs, err := w.src.ReadGroup(ctx, id, DefaultGroup, w.consumer, DefaultBatch)
	if err != nil || len(recs) == 0 {
		return 0, 0, err
	}
	acks := make([]string, 0, len(recs))
	kept := recs[:0]
	for _, r := range recs {
		if len(acks) == 0 || acks[len(acks)-1] != r.ID { // a batch entry's records share its id
			acks = append(acks, r.ID)
		}
		if r.Kind == "" {
			// Trimmed from the stream (over MAXLEN) before it was written.
			w.log.Error("audit: record lost to stream trimming", "event", id, "id", r.ID)
			continue
		}
		kept = append(kept, r)
	}
	if len(kept) > 0 {
		conflicts, err := w.dst.WriteRecords(ctx, kept)
		if err != nil {
			return 0, len(recs), err
		}
		for _, c := range conflicts {
			w.conflict(c)
		}
	}
	if err := w.src.Ack(ctx, id, DefaultGroup, acks...); err != nil {
		return 0, len(recs), err
	}
	return len(kept), len(recs), nil
}

// conflict reports an order kept aside: the buyer was told 201, so it is an
// error an operator must settle (the order_conflicts table holds it).
func (w *Worker) conflict(c queue.Conflict) {
	r := c.Record
	msg := "audit: seat sold twice: SQL holds it for another order; this order is kept in order_conflicts"
	if c.Reason == queue.ConflictLate {
		msg = "audit: order from a Redis state that was lost reached SQL after the rebuild began; " +
			"kept in order_conflicts (the seat may be sold again)"
	}
	w.log.Error(msg, "event", r.EventID, "seat", r.Seat, "reason", string(c.Reason),
		"order", r.OrderID, "user", r.UserID, "seq", r.Seq, "stream_id", r.ID,
		"holder_order", c.Holder.ID, "holder_user", c.Holder.UserID, "holder_seq", c.HolderSeq)
	if w.obs != nil {
		w.obs.Conflict(c)
	}
}
