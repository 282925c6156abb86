// Package metrics exports rushline's Prometheus metrics: HTTP, Redis, the
// admission ticker, and per-event queue gauges read at scrape time.
package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/queue"
)

// Metrics holds every collector of one server. Safe for concurrent use.
type Metrics struct {
	Registry      *prometheus.Registry
	HTTP          *prometheus.HistogramVec
	Redis         *prometheus.HistogramVec
	Errors        *prometheus.CounterVec
	Promotions    *prometheus.CounterVec
	PromotionTick prometheus.Histogram
	// PromotionLatency is admission decision → admitted message written to the client.
	PromotionLatency prometheus.Histogram
	StreamLag        *prometheus.GaugeVec
	ExpiredTotal     *prometheus.CounterVec
	AdmitRoom        *prometheus.GaugeVec
	AdmitLoad        *prometheus.GaugeVec
	SSE              *prometheus.GaugeVec
	// StatsStreams counts open public stats streams (not in SSE).
	StatsStreams *prometheus.GaugeVec
	// OrderConflicts counts orders the audit writer kept aside (see queue.Conflict).
	OrderConflicts *prometheus.CounterVec
	// AuditBacklog is each event's stream entries not yet written to SQL.
	AuditBacklog *prometheus.GaugeVec
	// Rebuilds counts events this replica rebuilt after Redis lost their state.
	Rebuilds *prometheus.CounterVec
}

// Latency buckets from 100 µs to 10 s.
var buckets = prometheus.ExponentialBuckets(0.0001, 2.5, 12)

// New registers rushline's metrics on a fresh registry.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		HTTP: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "rushline_http_request_duration_seconds", Help: "HTTP request latency by route and status code.", Buckets: buckets,
		}, []string{"route", "code"}),
		Redis: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "rushline_redis_command_duration_seconds", Help: "Redis command (or pipeline) latency.", Buckets: buckets,
		}, []string{"cmd"}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rushline_errors_total", Help: "API errors answered, by error code.",
		}, []string{"code"}),
		Promotions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rushline_promotions_total", Help: "Tokens promoted from waiting to active by this replica's ticker.",
		}, []string{"event"}),
		PromotionTick: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "rushline_admission_tick_seconds", Help: "Time to run one admission tick.", Buckets: buckets,
		}),
		PromotionLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "rushline_promotion_latency_seconds", Help: "Admission decision to the admitted message written to the client's stream.", Buckets: buckets,
		}),
		StreamLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rushline_stream_lag_seconds", Help: "Decision time of the newest stream record to this replica reading it.",
		}, []string{"event"}),
		ExpiredTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rushline_expired_total", Help: "Active windows that ran out.",
		}, []string{"event"}),
		AdmitRoom: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rushline_admit_batch", Help: "Promotions the policy allowed at the last tick.",
		}, []string{"event"}),
		AdmitLoad: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rushline_admit_load_tps", Help: "Downstream orders/s used by the adaptive policy at the last tick (-1: missing).",
		}, []string{"event"}),
		SSE: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rushline_sse_connections", Help: "Open Server-Sent Events streams.",
		}, []string{"event"}),
		StatsStreams: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rushline_stats_streams", Help: "Open public stats streams.",
		}, []string{"event"}),
		AuditBacklog: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rushline_audit_backlog",
			Help: "Stream entries (each one or more records) the audit writer has not yet written to SQL; they stay in Redis, untrimmed, until it has.",
		}, []string{"event"}),
		OrderConflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rushline_audit_order_conflicts_total",
			Help: "Orders the audit writer kept in order_conflicts instead of orders: seat_taken (SQL holds the seat for another order) or late (from a lost Redis state, after its rebuild began).",
		}, []string{"event", "reason"}),
		Rebuilds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rushline_event_rebuilds_total", Help: "Events this replica rebuilt from SQL after Redis lost their state.",
		}, []string{"event"}),
	}
	m.Registry.MustRegister(m.HTTP, m.Redis, m.Errors, m.Promotions, m.PromotionTick, m.PromotionLatency, m.StreamLag, m.ExpiredTotal, m.AdmitRoom, m.AdmitLoad, m.SSE, m.StatsStreams,
		m.OrderConflicts, m.Rebuilds, m.AuditBacklog,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// perEvent lists the vectors labelled by event.
func (m *Metrics) perEvent() []interface {
	DeletePartialMatch(prometheus.Labels) int
} {
	return []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{m.Promotions, m.StreamLag, m.ExpiredTotal, m.AdmitRoom, m.AdmitLoad, m.SSE, m.StatsStreams, m.AuditBacklog}
}

// Forget deletes every series of a dropped event, so short-lived events
// (practice races) leave no series behind.
func (m *Metrics) Forget(eventID string) {
	for _, v := range m.perEvent() {
		v.DeletePartialMatch(prometheus.Labels{"event": eventID})
	}
}

// Ticked records one admission tick; it implements admission.Observer.
func (m *Metrics) Ticked(eventID string, res queue.TickResult, took time.Duration) {
	m.Promotions.WithLabelValues(eventID).Add(float64(res.Promoted))
	m.PromotionTick.Observe(took.Seconds())
	m.AdmitRoom.WithLabelValues(eventID).Set(float64(res.Room))
	m.AdmitLoad.WithLabelValues(eventID).Set(res.Load)
}

// Conflict counts an order kept aside; it implements audit.Observer.
func (m *Metrics) Conflict(c queue.Conflict) {
	m.OrderConflicts.WithLabelValues(c.Record.EventID, string(c.Reason)).Inc()
}

// Backlog records an event's audit backlog; it implements audit.Observer.
func (m *Metrics) Backlog(eventID string, entries int64) {
	m.AuditBacklog.WithLabelValues(eventID).Set(float64(entries))
}

// Rebuilt counts a rebuild of an event; it implements recovery.Observer.
func (m *Metrics) Rebuilt(eventID string) {
	m.Rebuilds.WithLabelValues(eventID).Inc()
}

// Lag records how far behind the stream this replica reads; it implements push.Observer.
func (m *Metrics) Lag(eventID string, d time.Duration) {
	m.StreamLag.WithLabelValues(eventID).Set(d.Seconds())
}

// Expired records ended active windows; it implements admission.Observer.
func (m *Metrics) Expired(eventID string, n int) {
	m.ExpiredTotal.WithLabelValues(eventID).Add(float64(n))
}

// WatchQueues exports rushline_waiting and rushline_active per event, read
// from src at each scrape: O(events) Redis calls, never per user.
func (m *Metrics) WatchQueues(src *queue.Engine) {
	m.Registry.MustRegister(&queueCollector{src: src})
}

var (
	waitingDesc = prometheus.NewDesc("rushline_waiting", "Users waiting in line.", []string{"event"}, nil)
	activeDesc  = prometheus.NewDesc("rushline_active", "Users holding an active window.", []string{"event"}, nil)
	soldDesc    = prometheus.NewDesc("rushline_sold", "Seats sold.", []string{"event"}, nil)
)

type queueCollector struct{ src *queue.Engine }

func (q *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- waitingDesc
	ch <- activeDesc
	ch <- soldDesc
}

func (q *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	events, err := q.src.Events(ctx)
	if err != nil {
		return
	}
	for _, ev := range events {
		st, err := q.src.Stats(ctx, ev)
		if err != nil {
			return
		}
		ch <- prometheus.MustNewConstMetric(waitingDesc, prometheus.GaugeValue, float64(st.Waiting), ev.ID)
		ch <- prometheus.MustNewConstMetric(activeDesc, prometheus.GaugeValue, float64(st.Active), ev.ID)
		ch <- prometheus.MustNewConstMetric(soldDesc, prometheus.GaugeValue, float64(st.Sold), ev.ID)
	}
}

// RedisHook times every Redis command and pipeline; add it with AddHook.
func (m *Metrics) RedisHook() redis.Hook { return redisHook{m.Redis} }

type redisHook struct{ h *prometheus.HistogramVec }

func (redisHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r redisHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		r.h.WithLabelValues(cmd.Name()).Observe(time.Since(start).Seconds())
		return err
	}
}

func (r redisHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmds)
		r.h.WithLabelValues("pipeline").Observe(time.Since(start).Seconds())
		return err
	}
}

var _ redis.Hook = redisHook{}
