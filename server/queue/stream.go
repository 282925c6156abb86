package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// parseRecord reads one stream message of eventID.
func parseRecord(eventID string, m redis.XMessage) Record {
	str := func(k string) string { s, _ := m.Values[k].(string); return s }
	ms := func(k string) time.Time {
		n, err := strconv.ParseInt(str(k), 10, 64)
		if err != nil || n == 0 {
			return time.Time{}
		}
		return time.UnixMilli(n).UTC()
	}
	seq, _ := strconv.ParseInt(str("q"), 10, 64)
	return Record{
		ID:        m.ID,
		Kind:      RecordKind(str("k")),
		EventID:   eventID,
		Seq:       seq,
		UserID:    str("u"),
		At:        ms("t"),
		ExpiresAt: ms("x"),
		Seat:      str("seat"),
		OrderID:   str("o"),
	}
}

func parseRecords(eventID string, ms []redis.XMessage) []Record {
	recs := make([]Record, len(ms))
	for i, m := range ms {
		recs[i] = parseRecord(eventID, m)
	}
	return recs
}

// EnsureGroup creates consumer group on eventID's stream, reading from its start.
func (e *Engine) EnsureGroup(ctx context.Context, eventID, group string) error {
	err := e.rdb.XGroupCreateMkStream(ctx, Keys(eventID)[keyStream], group, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("queue: create group %s on %s: %w", group, eventID, storeErr(ctx, err))
	}
	return nil
}

// ReadGroup returns up to count records for consumer in group: first those it
// was given before and has not acknowledged, then new ones. It does not block.
func (e *Engine) ReadGroup(ctx context.Context, eventID, group, consumer string, count int64) ([]Record, error) {
	stream := Keys(eventID)[keyStream]
	for _, start := range []string{"0", ">"} {
		res, err := e.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: group, Consumer: consumer, Streams: []string{stream, start}, Count: count, Block: -1,
		}).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("queue: read %s: %w", eventID, storeErr(ctx, err))
		}
		if len(res) > 0 && len(res[0].Messages) > 0 {
			return parseRecords(eventID, res[0].Messages), nil
		}
	}
	return nil, nil
}

// Claim moves records that other consumers of group left unacknowledged for
// longer than idle to consumer, so a dead replica's share is not lost.
func (e *Engine) Claim(ctx context.Context, eventID, group, consumer string, idle time.Duration, count int64) (int, error) {
	ms, _, err := e.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream: Keys(eventID)[keyStream], Group: group, Consumer: consumer, MinIdle: idle, Start: "0-0", Count: count,
	}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("queue: claim %s: %w", eventID, storeErr(ctx, err))
	}
	return len(ms), nil
}

// Ack acknowledges records of group as handled.
func (e *Engine) Ack(ctx context.Context, eventID, group string, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	if err := e.rdb.XAck(ctx, Keys(eventID)[keyStream], group, ids...).Err(); err != nil {
		return fmt.Errorf("queue: ack %s: %w", eventID, storeErr(ctx, err))
	}
	return nil
}

// Records returns up to count records of eventID after id ("0" for the start).
func (e *Engine) Records(ctx context.Context, eventID, after string, count int64) ([]Record, error) {
	start := "-"
	if after != "" && after != "0" {
		start = "(" + after
	}
	ms, err := e.rdb.XRangeN(ctx, Keys(eventID)[keyStream], start, "+", count).Result()
	if err != nil {
		return nil, fmt.Errorf("queue: records %s: %w", eventID, storeErr(ctx, err))
	}
	return parseRecords(eventID, ms), nil
}
