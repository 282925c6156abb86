// Package audit writes the SQL audit trail behind the queue: it tails every
// event's Redis stream through a consumer group and writes the records to the
// database in batches. The hot path never waits on SQL; while SQL is away the
// records wait in the stream, which nothing trims past what this writer has
// written (see queue.Engine.Trim), and are written once it is back; the
// backlog meanwhile shows in Behind, the Observer and a warning log.
package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
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
	// DefaultTrimEvery is how often each event's stream is trimmed.
	DefaultTrimEvery = 10 * time.Second
	// DefaultRefresh is how often the running worker lists the events and
	// measures their backlogs: each is a Redis round trip per round, and
	// rounds come up to ten a second while records flow.
	DefaultRefresh = time.Second
	// DefaultWarnBacklog is the backlog (stream entries not yet written to
	// SQL, all events together) past which the worker logs a warning.
	DefaultWarnBacklog = 10_000
)

// Writer stores records durably; store.Store implements it. It must be
// idempotent: a record may be written twice after a crash. It returns the
// orders it kept aside instead of recording them as sold (see queue.Conflict).
type Writer interface {
	WriteRecords(ctx context.Context, recs []queue.Record) ([]queue.Conflict, error)
}

// Observer learns of the orders the writer kept aside, e.g. to count them,
// and of each event's backlog: the stream entries (each one or more
// records) not yet written to SQL, measured every DefaultRefresh while Run
// runs, and by every Round.
type Observer interface {
	Conflict(c queue.Conflict)
	Backlog(eventID string, entries int64)
}

// Option configures a Worker.
type Option func(*Worker)

// WithObserver reports every order kept aside, and the backlogs, to o.
func WithObserver(o Observer) Option { return func(w *Worker) { w.obs = o } }

// WithTrimEvery sets how often each event's stream is trimmed
// (DefaultTrimEvery).
func WithTrimEvery(d time.Duration) Option { return func(w *Worker) { w.trimEvery = d } }

// WithWarnBacklog sets the backlog past which the worker warns
// (DefaultWarnBacklog).
func WithWarnBacklog(n int64) Option { return func(w *Worker) { w.warnAt = n } }

// Worker copies stream records to SQL. Run one per replica; the consumer
// group shares the work. Not safe for concurrent Run calls; Behind is safe
// to call at any time.
type Worker struct {
	src      *queue.Engine
	dst      Writer
	consumer string
	log      *slog.Logger
	groups   map[string]bool
	// clean holds the events whose group has nothing pending for this
	// consumer: everything it read it acknowledged, and no claim since.
	clean     map[string]bool
	ids       []string
	listed    time.Time
	measured  time.Time
	claimed   time.Time
	trimmed   time.Time
	keep      time.Duration
	trimEvery time.Duration
	warnAt    int64
	warned    bool
	obs       Observer
	// behind is the backlog of every event as last measured.
	behind atomic.Int64
}

// New returns a worker named consumer (unique per replica).
func New(src *queue.Engine, dst Writer, consumer string, log *slog.Logger, opts ...Option) *Worker {
	if log == nil {
		log = slog.Default()
	}
	w := &Worker{src: src, dst: dst, consumer: consumer, log: log, groups: map[string]bool{}, clean: map[string]bool{}, keep: DefaultKeep,
		trimEvery: DefaultTrimEvery, warnAt: DefaultWarnBacklog}
	for _, o := range opts {
		o(w)
	}
	return w
}

// Keep sets how long written records stay in the stream before trimming.
func (w *Worker) Keep(d time.Duration) { w.keep = d }

// Behind is the backlog as last measured (at most DefaultRefresh ago while
// Run runs): the stream entries of every event not yet written to SQL (a
// batch entry holds many records).
func (w *Worker) Behind() int64 { return w.behind.Load() }

// Run copies records until ctx ends. It pauses DefaultIdle after a round
// that found nothing or failed, DefaultLinger after one that found no full
// batch, and goes straight on while a backlog fills whole batches.
func (w *Worker) Run(ctx context.Context) {
	failing := false
	for ctx.Err() == nil {
		n, full, err := w.round(ctx, false)
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

// Round copies at most one batch per event and returns how many records it
// wrote; it lists the events and measures the backlogs afresh.
func (w *Worker) Round(ctx context.Context) (int, error) {
	n, _, err := w.round(ctx, true)
	return n, err
}

// round is Round, also reporting whether some event filled a whole batch
// (more may be waiting). Unless fresh, it lists the events and measures
// the backlogs only every DefaultRefresh.
func (w *Worker) round(ctx context.Context, fresh bool) (total int, full bool, err error) {
	if fresh || w.ids == nil || time.Since(w.listed) >= DefaultRefresh {
		ids, err := w.src.EventIDs(ctx)
		if err != nil {
			return 0, false, err
		}
		w.ids, w.listed = ids, time.Now()
	}
	ids := w.ids
	measure := fresh || time.Since(w.measured) >= DefaultRefresh
	if measure {
		w.measured = time.Now()
	}
	claim := time.Since(w.claimed) > DefaultClaimAfter/3
	if claim {
		w.claimed = time.Now()
	}
	trim := time.Since(w.trimmed) > w.trimEvery
	if trim {
		w.trimmed = time.Now()
	}
	var (
		errs   []error
		behind int64
	)
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
		if !measure {
			continue
		}
		if n, err := w.src.Backlog(ctx, id, DefaultGroup); err == nil {
			behind += n
			if w.obs != nil {
				w.obs.Backlog(id, n)
			}
		}
	}
	if measure {
		w.behind.Store(behind)
		w.warn(behind)
	}
	return total, full, errors.Join(errs...)
}

// warn logs when the backlog passes the warning mark, and when it is back
// under it.
func (w *Worker) warn(behind int64) {
	switch {
	case behind > w.warnAt && !w.warned:
		w.warned = true
		w.log.Warn("audit: SQL is behind; the records wait in Redis, untrimmed, until they are written",
			"backlog_entries", behind)
	case behind <= w.warnAt && w.warned:
		w.warned = false
		w.log.Info("audit: SQL has caught up", "backlog_entries", behind)
	}
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
		delete(w.clean, id) // a worker started or the group remade: look
	}
	if claim {
		n, err := w.src.Claim(ctx, id, DefaultGroup, w.consumer, DefaultClaimAfter, DefaultBatch)
		if err != nil {
			return 0, 0, err
		}
		if n > 0 {
			delete(w.clean, id)
		}
	}
	if trim {
		if _, err := w.src.Trim(ctx, id, DefaultGroup, w.keep); err != nil {
			return 0, 0, err
		}
	}
	pending := !w.clean[id]
	recs, err := w.src.ReadGroup(ctx, id, DefaultGroup, w.consumer, DefaultBatch, pending)
	if err != nil {
		return 0, 0, err
	}
	if len(recs) == 0 {
		w.clean[id] = true
		return 0, 0, nil
	}
	// Until this batch is acknowledged it is pending.
	delete(w.clean, id)
	acks := make([]string, 0, len(recs))
	kept := recs[:0]
	for _, r := range recs {
		if len(acks) == 0 || acks[len(acks)-1] != r.ID { // a batch entry's records share its id
			acks = append(acks, r.ID)
		}
		if r.Kind == "" {
			// Trimmed from the stream before it was written: only by an
			// engine capped with queue.WithStreamMaxLen.
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
	// A full batch of what was pending may have left more of it.
	w.clean[id] = !pending || len(recs) < DefaultBatch
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
