// Package naive is the baseline rushline is measured against: a minimal gin
// server with one EVALSHA per join and one ZRANK per status read, and no auth,
// idempotency, metrics or batching. It is deliberately plain; keep it so.
package naive

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"
)

// PoolSize is the go-redis pool size, the same as rushline's.
const PoolSize = 64

// joinScript puts a user in line once: SETNX on the user's key, INCR for the
// place, ZADD into the line and ZCARD for its length.
// KEYS[1] line (sorted set), KEYS[2] sequence, KEYS[3] the user's key;
// ARGV[1] a fresh token. Returns {token, rank, waiting}.
const joinLua = `
if redis.call('SETNX', KEYS[3], ARGV[1]) == 0 then
  local tok = redis.call('GET', KEYS[3])
  return {tok, redis.call('ZRANK', KEYS[1], tok) or -1, redis.call('ZCARD', KEYS[1])}
end
local seq = redis.call('INCR', KEYS[2])
redis.call('ZADD', KEYS[1], seq, ARGV[1])
local n = redis.call('ZCARD', KEYS[1])
return {ARGV[1], n - 1, n}
`

var joinScript = redis.NewScript(joinLua)

// JoinScriptSource is the join script's Lua, for redis-benchmark's EVALSHA ceiling.
func JoinScriptSource() string { return joinLua }

// Keys returns the line, sequence and user keys of one event.
func Keys(eventID, userID string) []string {
	p := "naive:{" + eventID + "}:"
	return []string{p + "w", p + "seq", p + "u:" + userID}
}

// Handler serves the two baseline routes on rdb:
// POST /api/v1/events/:event/queue {"bot_id": "…"} and
// GET /api/v1/events/:event/queue/:token.
func Handler(rdb *redis.Client) http.Handler {
	r := router()
	r.POST("/api/v1/events/:event/queue", func(c *gin.Context) {
		botID, ok := bindJoin(c)
		if !ok {
			return
		}
		ev := c.Param("event")
		r, err := joinScript.Run(c, rdb, Keys(ev, "VIRTUAL:"+botID), rand.Text()).Slice()
		if err != nil {
			c.JSON(http.StatusServiceUnavailable, gin.H{"error": gin.H{"code": "UNAVAILABLE", "message": "redis is unreachable"}})
			return
		}
		c.JSON(http.StatusCreated, gin.H{"token": r[0], "status": "WAITING", "position": r[1].(int64) + 1, "waiting": r[2]})
	})
	r.GET("/api/v1/events/:event/queue/:token", func(c *gin.Context) {
		rank, err := rdb.ZRank(c, Keys(c.Param("event"), "")[0], c.Param("token")).Result()
		switch {
		case errors.Is(err, redis.Nil):
			c.JSON(http.StatusNotFound, gin.H{"error": gin.H{"code": "TOKEN_NOT_FOUND", "message": "no such queue token"}})
		case err != nil:
			c.JSON(http.StatusServiceUnavailable, gin.H{"error": gin.H{"code": "UNAVAILABLE", "message": "redis is unreachable"}})
		default:
			c.JSON(http.StatusOK, gin.H{"status": "WAITING", "position": rank + 1})
		}
	})
	return r
}

// Floor answers the baseline's two routes as the baseline parses them (the
// join's JSON body, the status's path), with a constant of the same shape and
// no Redis at all: the HTTP floor. No server beats it with the same load
// generator on the same machine, so floor ÷ baseline is the most any ratio
// can be there.
func Floor() http.Handler {
	r := router()
	r.POST("/api/v1/events/:event/queue", func(c *gin.Context) {
		if _, ok := bindJoin(c); !ok {
			return
		}
		c.JSON(http.StatusCreated, gin.H{"token": floorToken, "status": "WAITING", "position": 1, "waiting": 1})
	})
	r.GET("/api/v1/events/:event/queue/:token", func(c *gin.Context) {
		if c.Param("token") == "" {
			c.JSON(http.StatusNotFound, gin.H{"error": gin.H{"code": "TOKEN_NOT_FOUND", "message": "no such queue token"}})
			return
		}
		c.JSON(http.StatusOK, gin.H{"status": "WAITING", "position": 1})
	})
	return r
}

// router is a bare gin engine with the health route both servers share.
func router() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.GET("/healthz", func(c *gin.Context) { c.Status(http.StatusOK) })
	return r
}

// bindJoin reads a join's bot id, or answers 400 and returns false.
func bindJoin(c *gin.Context) (string, bool) {
	var body struct {
		BotID string `json:"bot_id"`
	}
	if err := c.ShouldBindJSON(&body); err != nil || body.BotID == "" {
		c.JSON(http.StatusBadRequest, gin.H{"error": gin.H{"code": "VALIDATION", "message": "bot_id is required"}})
		return "", false
	}
	return body.BotID, true
}

// floorToken is as long as the baseline's tokens (rand.Text).
const floorToken = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

// Serve runs the baseline on addr against the Redis at redisURL until ctx ends.
func Serve(ctx context.Context, addr, redisURL string) error {
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return err
	}
	opt.PoolSize = PoolSize
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	return serve(ctx, addr, Handler(rdb))
}

// ServeFloor runs Floor on addr until ctx ends.
func ServeFloor(ctx context.Context, addr string) error { return serve(ctx, addr, Floor()) }

func serve(ctx context.Context, addr string, h http.Handler) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
