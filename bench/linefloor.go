package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc"
)

// LineFloorFigures hold join.lua against the least a line held in a sorted
// set can cost Redis (queue.LineFloor: one INCRBY and one ZADD a batch,
// nothing else) at one line length: both driven in process on one Redis,
// taking turns of lineFloorTurn batches of Batch new users, each on an
// event of its own whose line started at Waiting.
type LineFloorFigures struct {
	Waiting int `json:"waiting"`
	Batch   int `json:"batch"`
	// Users is how many new users each of the two put in line.
	Users int `json:"users"`
	// JoinCPU and FloorCPU are µs of Redis CPU per user.
	JoinCPU  float64 `json:"join_redis_cpu_us"`
	FloorCPU float64 `json:"floor_redis_cpu_us"`
}

// Ratio is join.lua's Redis CPU per user over the floor's.
func (f LineFloorFigures) Ratio() float64 {
	if f.FloorCPU <= 0 {
		return 0
	}
	return f.JoinCPU / f.FloorCPU
}

// Ceiling is the floor's one event's ceiling: joins a second one Redis core
// takes at FloorCPU each.
func (f LineFloorFigures) Ceiling() float64 {
	if f.FloorCPU <= 0 {
		return 0
	}
	return 1e6 / f.FloorCPU
}

// lineFloorBatch is the step's batch: about what the HTTP loads gather into
// one script call at 64 connections.
const lineFloorBatch = 48

// lineFloorTurn is how many batches each script runs before the other
// takes its turn; Redis's CPU is read around each turn.
const lineFloorTurn = 20

// lineFloor measures join.lua and the sorted-set floor at every size, for
// Duration each.
func (r *runner) lineFloor(ctx context.Context) error {
	eng := queue.New(r.rdb, []byte("bench-line-floor"))
	defer eng.Close()
	for _, n := range r.cfg.Sizes {
		ids := []string{"bench-line-join-" + SizeLabel(n), "bench-line-floor-" + SizeLabel(n)}
		for _, id := range ids {
			if err := eng.CreateEvent(ctx, queue.Event{ID: id, Name: id, Seats: 1, Capacity: 1, AdmitBatch: 1,
				AdmitIntervalMS: 3_600_000, ActiveTTLS: 3600, Policy: queue.PolicyBatch, Paused: true,
				CreatedAt: time.Now()}); err != nil {
				return err
			}
			if err := eng.FillLine(ctx, id, "fill:", n); err != nil {
				return err
			}
		}
		var cpu [2]time.Duration
		users := 0
		for end := time.Now().Add(r.cfg.Duration); time.Now().Before(end); users += lineFloorTurn * lineFloorBatch {
			for k, s := range []queue.LineScript{queue.LineJoin, queue.LineFloor} {
				before, err := redisCPU(ctx, r.rdb)
				if err != nil {
					return err
				}
				for t := range lineFloorTurn {
					batch := make([]string, lineFloorBatch)
					for i := range batch {
						batch[i] = "lf:" + strconv.Itoa(users+t*lineFloorBatch+i)
					}
					if err := eng.RunLineBatch(ctx, s, ids[k], batch); err != nil {
						return fmt.Errorf("sorted-set floor @%s: %w", SizeLabel(n), err)
					}
				}
				after, err := redisCPU(ctx, r.rdb)
				if err != nil {
					return err
				}
				cpu[k] += after - before
			}
		}
		us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / float64(users) }
		r.res.LineFloor = append(r.res.LineFloor, LineFloorFigures{Waiting: n, Batch: lineFloorBatch, Users: users,
			JoinCPU: us(cpu[0]), FloorCPU: us(cpu[1])})
		if err := r.rdb.FlushAll(ctx).Err(); err != nil {
			return err
		}
	}
	return nil
}

// redisCPU is the CPU time Redis has used so far, by its own account (INFO
// cpu), finer than /proc's clock ticks for the step's short turns.
func redisCPU(ctx context.Context, rdb *redis.Client) (time.Duration, error) {
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	return redisproc.InfoCPU(info)
}
