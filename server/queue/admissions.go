package queue

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// admissionsChunk is how many stream records one XREVRANGE reads while
// looking for admissions among the other records.
const admissionsChunk = 512

// AdmissionsMaxChunks bounds one Admissions call to this many chunks (the
// newest 10,240 records), so rare admissions never make it read a whole
// stream.
const AdmissionsMaxChunks = 20

// Admissions returns up to limit of eventID's latest admitted records, newest
// first, read backwards from its stream: at most AdmissionsMaxChunks chunks
// of its newest records, and only as far back as the stream keeps (see
// DefaultStreamMaxLen and the audit writer's trimming). Admissions older
// than that are not listed.
func (e *Engine) Admissions(ctx context.Context, eventID string, limit int) ([]Record, error) {
	stream := key(eventID, keyStream)
	out := make([]Record, 0, min(limit, admissionsChunk))
	end := "+"
	for chunk := 0; len(out) < limit && chunk < AdmissionsMaxChunks; chunk++ {
		ms, err := e.rdb.XRevRangeN(ctx, stream, end, "-", admissionsChunk).Result()
		if err != nil && err != redis.Nil {
			return nil, fmt.Errorf("queue: admissions %s: %w", eventID, storeErr(ctx, err))
		}
		for _, m := range ms {
			// A batch entry's records are oldest first: read them backwards.
			recs := appendRecords(nil, eventID, m)
			for i := len(recs) - 1; i >= 0 && len(out) < limit; i-- {
				if recs[i].Kind == RecordAdmitted {
					out = append(out, recs[i])
				}
			}
		}
		if len(ms) < admissionsChunk {
			break
		}
		end = "(" + ms[len(ms)-1].ID
	}
	return out, nil
}
