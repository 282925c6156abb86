package recovery

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/store"
)

// DefaultEvery is how often a Keeper compares SQL's events with Redis.
const DefaultEvery = 500 * time.Millisecond

// Observer learns of the rebuilds a Keeper ran, e.g. to count them.
type Observer interface {
	Rebuilt(eventID string)
}

// KeeperOption configures a Keeper.
type KeeperOption func(*Keeper)

// WithEvery sets how often the keeper looks.
func WithEvery(d time.Duration) KeeperOption { return func(k *Keeper) { k.every = d } }

// WithObserver reports every rebuild to o.
func WithObserver(o Observer) KeeperOption { return func(k *Keeper) { k.obs = o } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) KeeperOption { return func(k *Keeper) { k.log = l } }

// Keeper runs on every replica. It finds the events SQL holds whose Redis
// state is gone (FLUSHALL, a failover to an empty replica, a new Redis) and
// rebuilds each from SQL under the event's restore lease, so exactly one
// replica rebuilds an event while the others answer 503 for it (Lost is the
// engine's queue.WithLost). And it keeps the numbers Redis may hand out
// reserved in SQL ahead of use (queue.Catalog.TopUp). Safe for concurrent use.
type Keeper struct {
	src     *store.Store
	eng     *queue.Engine
	cat     *queue.Catalog
	replica string
	every   time.Duration
	obs     Observer
	log     *slog.Logger
	nudge   chan struct{}

	mu    sync.RWMutex
	known map[string]queue.Incarnation // SQL's events at the last look; nil before the first
	// absent holds ids SQL lacked when Lost asked it, until the next look, so
	// that requests for unknown events cost SQL one query per id and look.
	absent map[string]bool
	// warned holds the events whose Redis mark differs from SQL's, said once.
	warned map[string]bool
}

// NewKeeper returns a keeper of src's events in eng's Redis, for replica
// (unique among the replicas, it names the lease holder).
func NewKeeper(src *store.Store, eng *queue.Engine, cat *queue.Catalog, replica string, opts ...KeeperOption) *Keeper {
	k := &Keeper{src: src, eng: eng, cat: cat, replica: replica, every: DefaultEvery, log: slog.Default(),
		nudge: make(chan struct{}, 1), warned: map[string]bool{}, absent: map[string]bool{}}
	for _, o := range opts {
		o(k)
	}
	return k
}

// maxAbsent bounds the ids Lost remembers SQL lacked between two looks.
const maxAbsent = 10_000

// Lost reports whether eventID, which Redis lacks, is an event SQL holds,
// and has the keeper look at once. It asks SQL about an id created since the
// last look. When SQL cannot tell, it says yes: a 503 is the safe answer.
func (k *Keeper) Lost(ctx context.Context, eventID string) bool {
	k.mu.RLock()
	_, ok := k.known[eventID]
	absent := k.absent[eventID]
	k.mu.RUnlock()
	if absent {
		return false
	}
	if !ok {
		_, err := k.src.Event(ctx, eventID)
		if queue.ErrorCode(err) == queue.CodeEventNotFound {
			k.mu.Lock()
			if len(k.absent) >= maxAbsent {
				clear(k.absent)
			}
			k.absent[eventID] = true
			k.mu.Unlock()
			return false
		}
	}
	select {
	case k.nudge <- struct{}{}:
	default:
	}
	return true
}

// Load reads SQL's events, so that Lost can tell from the first request on.
func (k *Keeper) Load(ctx context.Context) (map[string]queue.Incarnation, error) {
	incs, err := k.src.Incarnations(ctx)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.known = incs
	clear(k.absent)
	k.mu.Unlock()
	return incs, nil
}

// Run looks every interval, and at once when nudged, until ctx ends.
func (k *Keeper) Run(ctx context.Context) {
	failing := false
	t := time.NewTicker(k.every)
	defer t.Stop()
	for {
		err := k.Pass(ctx)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			k.log.Warn("keeper: cannot compare SQL's events with Redis; retrying", "err", err)
			failing = true
		case err == nil && failing:
			k.log.Info("keeper: comparing SQL's events with Redis again")
			failing = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-k.nudge:
		}
	}
}

// Pass looks once: it rebuilds every event SQL holds that Redis lacks and
// tops up the reserved numbers of those running low. A failure with one
// event is logged and the others go on; the error is for SQL or Redis failing
// as a whole.
func (k *Keeper) Pass(ctx context.Context) error {
	incs, err := k.Load(ctx)
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(incs))
	for id := range incs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	held, err := k.eng.Holds(ctx, ids)
	if err != nil {
		return err
	}
	for i, id := range ids {
		h, inc := held[i], incs[id]
		switch {
		case !h.Present:
			k.rebuild(ctx, id)
		case inc.Mark != "" && h.Mark != inc.Mark:
			k.foreign(id, h, inc)
		case h.Low():
			if err := k.cat.TopUp(ctx, id, h); err != nil && ctx.Err() == nil {
				k.log.Warn("keeper: cannot reserve numbers; the event stops handing them out when those it has run out",
					"event", id, "seq", h.Seq, "seq_cap", h.SeqCap, "admitted", h.Admitted, "adm_cap", h.AdmitCap, "err", err)
			}
		}
	}
	return nil
}

// foreign says once that Redis holds a state of id SQL does not know: an old
// copy (a backup, a replica that lagged) or another deployment's. It is not
// rebuilt over by itself: which side is right takes an operator.
func (k *Keeper) foreign(id string, h queue.Held, inc queue.Incarnation) {
	k.mu.Lock()
	said := k.warned[id]
	k.warned[id] = true
	k.mu.Unlock()
	if !said {
		k.log.Error("keeper: Redis holds a state of the event that SQL does not know (an old copy?); "+
			"check it, then run `rushline-server recover --force` to rebuild it from SQL",
			"event", id, "redis_mark", h.Mark, "sql_mark", inc.Mark)
	}
}

// rebuild rebuilds id from SQL if, under its restore lease, Redis still lacks
// it; another replica holding the lease is rebuilding it already.
func (k *Keeper) rebuild(ctx context.Context, id string) {
	l, err := k.eng.LeaseRestore(ctx, id, k.replica, queue.DefaultRestoreLease)
	if err != nil {
		if queue.ErrorCode(err) != queue.CodeEventExists && ctx.Err() == nil {
			k.log.Warn("keeper: cannot take the restore lease", "event", id, "err", err)
		}
		return
	}
	defer func() { _ = l.Release(ctx) }()
	start := time.Now()
	rep, err := rebuild(ctx, k.src, k.eng, l, id, false)
	switch {
	case queue.ErrorCode(err) == queue.CodeEventExists:
		// Rebuilt by another replica between our look and the lease.
	case queue.ErrorCode(err) == queue.CodeEventNotFound:
		// Deleted from SQL meanwhile.
	case err != nil:
		if ctx.Err() == nil {
			k.log.Error("keeper: rebuilding an event Redis lost failed; it answers 503 until a rebuild succeeds",
				"event", id, "err", err)
		}
	default:
		k.log.Warn("keeper: rebuilt an event from SQL after Redis lost its state", "event", id,
			"report", rep.String(), "took", time.Since(start).Round(time.Millisecond))
		if k.obs != nil {
			k.obs.Rebuilt(id)
		}
	}
}
