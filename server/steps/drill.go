package steps

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/queue"
)

// The captcha drill: a captcha alone, timed by the server from the moment
// its image is served to the right answer, against everyone's drills.
const (
	// DrillTTL is how long a drill's image may be answered.
	DrillTTL = 5 * time.Minute
	// drillKeep is how many drill times the percentile counts; past it the
	// oldest go.
	drillKeep = 100_000
	// drillTimes holds every drill's time (ms) by its id, drillOrder when
	// each was answered (to drop the oldest); drillPrefix starts one drill's
	// hash.
	drillTimes  = "rl:{drill}:captcha"
	drillOrder  = "rl:{drill}:captcha:at"
	drillPrefix = "rl:{drill}:cap:"
)

// Drill is one captcha drill, made for a user.
type Drill struct {
	ID string `json:"id"`
}

// DrillResult is an answered drill.
type DrillResult struct {
	MS int64 `json:"ms"`
	// People counts the drills answered so far, this one included;
	// Percentile is the share (%) of the others that took longer.
	People     int64   `json:"people"`
	Percentile float64 `json:"percentile"`
}

// NewDrill makes a captcha drill for userID.
func (s *Service) NewDrill(ctx context.Context, userID string) (Drill, error) {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	if err := s.rdb.HSet(ctx, drillPrefix+id, "u", userID).Err(); err != nil {
		return Drill{}, queue.Unavailable(err)
	}
	if err := s.rdb.PExpire(ctx, drillPrefix+id, DrillTTL).Err(); err != nil {
		return Drill{}, queue.Unavailable(err)
	}
	return Drill{ID: id}, nil
}

// errNoDrill is an unknown or finished drill.
func errNoDrill(id string) error {
	return queue.Errorf(queue.CodeNotFound, "no captcha drill %q (each takes one answer, within %v)", id, DrillTTL)
}

// DrillImage draws drill id's image for userID and starts its clock; a new
// image voids the one before.
func (s *Service) DrillImage(ctx context.Context, id, userID string) ([]byte, error) {
	u, err := s.rdb.HGet(ctx, drillPrefix+id, "u").Result()
	if errors.Is(err, redis.Nil) || u != userID {
		return nil, errNoDrill(id)
	}
	if err != nil {
		return nil, queue.Unavailable(err)
	}
	png, answer, err := NewCaptcha()
	if err != nil {
		return nil, err
	}
	if err := s.rdb.HSet(ctx, drillPrefix+id, "a", answer, "t", s.eng.Now().UnixMilli()).Err(); err != nil {
		return nil, queue.Unavailable(err)
	}
	return png, nil
}

// AnswerDrill checks drill id's answer: right, it records the time from
// the image to now; wrong (or no image yet), the drill is over. Either way
// it takes one answer.
func (s *Service) AnswerDrill(ctx context.Context, id, userID, answer string) (DrillResult, error) {
	key := drillPrefix + id
	pipe := s.rdb.TxPipeline()
	get := pipe.HMGet(ctx, key, "u", "a", "t")
	pipe.Del(ctx, key)
	if _, err := pipe.Exec(ctx); err != nil {
		return DrillResult{}, queue.Unavailable(err)
	}
	v := get.Val()
	u, _ := v[0].(string)
	want, _ := v[1].(string)
	at, _ := v[2].(string)
	if u == "" || u != userID {
		return DrillResult{}, errNoDrill(id)
	}
	if want == "" || want != answer {
		return DrillResult{}, queue.Errorf(queue.CodeCaptchaWrong, "wrong digits: start a new drill")
	}
	start, _ := strconv.ParseInt(at, 10, 64)
	ms := max(0, s.eng.Now().UnixMilli()-start)
	pipe = s.rdb.TxPipeline()
	pipe.ZAdd(ctx, drillTimes, redis.Z{Score: float64(ms), Member: id})
	pipe.ZAdd(ctx, drillOrder, redis.Z{Score: float64(s.eng.Now().UnixMilli()), Member: id})
	slower := pipe.ZCount(ctx, drillTimes, "("+strconv.FormatInt(ms, 10), "+inf")
	n := pipe.ZCard(ctx, drillTimes)
	if _, err := pipe.Exec(ctx); err != nil {
		return DrillResult{}, queue.Unavailable(err)
	}
	if over := n.Val() - drillKeep; over > 0 {
		old, err := s.rdb.ZPopMin(ctx, drillOrder, over).Result()
		if err == nil && len(old) > 0 {
			ids := make([]any, len(old))
			for i, z := range old {
				ids[i] = z.Member
			}
			s.rdb.ZRem(ctx, drillTimes, ids...)
		}
	}
	r := DrillResult{MS: ms, People: n.Val()}
	if others := r.People - 1; others > 0 {
		r.Percentile = math.Round(1000*float64(slower.Val())/float64(others)) / 10
	}
	return r, nil
}
