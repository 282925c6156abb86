package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/rushline/rushline/server/auth"
	"github.com/rushline/rushline/server/queue"
)

func (s *Server) createSession(c *gin.Context) {
	var req struct {
		Nickname *string `json:"nickname"`
	}
	if err := decode(c, &req); err != nil {
		s.fail(c, err)
		return
	}
	if req.Nickname == nil || !queue.ValidNickname(*req.Nickname) {
		s.fail(c, badRequest("nickname must be 1-32 printable characters"))
		return
	}
	id := auth.NewUserID()
	tok, exp, err := s.Signer.IssueDeviceSession(id, *req.Nickname, s.deviceCookie(c))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, gin.H{"user_id": id, "nickname": *req.Nickname, "access_token": tok, "expires_at": exp.UTC()})
}

// eventJSON is an event as the API shows it, with stats on a single GET.
type eventJSON struct {
	queue.Event
	Stats *queue.Stats `json:"stats,omitempty"`
}

// listEvents lists the events; practice races, each a person's private
// event, only for a caller with the right admin key.
func (s *Server) listEvents(c *gin.Context) {
	events, err := s.Engine.Events(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	if k := c.GetHeader(headerAdmin); k == "" || !auth.Equal(k, s.Keys.AdminKey()) {
		public := make([]queue.Event, 0, len(events))
		for _, ev := range events {
			if !ev.Practice {
				public = append(public, ev)
			}
		}
		events = public
	}
	if events == nil {
		events = []queue.Event{}
	}
	c.JSON(http.StatusOK, gin.H{"events": events})
}

func (s *Server) getEvent(c *gin.Context) {
	ev, err := s.Engine.Event(c.Request.Context(), c.Param("event"))
	if err != nil {
		s.fail(c, err)
		return
	}
	st, err := s.Engine.Stats(c.Request.Context(), ev)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, eventJSON{Event: ev, Stats: &st})
}

// eventFields are the settable fields of an event; nil means not given.
type eventFields struct {
	ID              *string  `json:"id"`
	Name            *string  `json:"name"`
	Seats           *int     `json:"seats"`
	Capacity        *int     `json:"capacity"`
	AdmitBatch      *int     `json:"admit_batch"`
	AdmitIntervalMS *int     `json:"admit_interval_ms"`
	ActiveTTLS      *int     `json:"active_ttl_s"`
	Policy          *string  `json:"policy"`
	MaxTPS          *int     `json:"max_tps"`
	PriorityShare   *float64 `json:"priority_share"`
	OpensAt         *string  `json:"opens_at"`
	ClosesAt        *string  `json:"closes_at"`
	QueueMode       *string  `json:"queue_mode"`
	PrequeueOpensAt *string  `json:"prequeue_opens_at"`
	Challenge       *string  `json:"challenge"`
	PowBits         *int     `json:"pow_bits"`

	// The times above, parsed by times.
	opensAt, closesAt, prequeueOpensAt *time.Time
}

// times parses the time fields given, so a malformed one is a 400 naming it.
func (f *eventFields) times() error {
	var err error
	if f.opensAt, err = rfc3339("opens_at", f.OpensAt); err != nil {
		return err
	}
	if f.closesAt, err = rfc3339("closes_at", f.ClosesAt); err != nil {
		return err
	}
	f.prequeueOpensAt, err = rfc3339("prequeue_opens_at", f.PrequeueOpensAt)
	return err
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// apply copies the given mutable fields onto ev (times parsed).
func (f eventFields) apply(ev *queue.Event) {
	set(&ev.Capacity, f.Capacity)
	set(&ev.AdmitBatch, f.AdmitBatch)
	set(&ev.AdmitIntervalMS, f.AdmitIntervalMS)
	set(&ev.ActiveTTLS, f.ActiveTTLS)
	set(&ev.MaxTPS, f.MaxTPS)
	set(&ev.PriorityShare, f.PriorityShare)
	if f.Policy != nil {
		ev.Policy = queue.Policy(*f.Policy)
	}
	if f.closesAt != nil {
		ev.ClosesAt = f.closesAt
	}
	if f.QueueMode != nil {
		ev.QueueMode = queue.QueueMode(*f.QueueMode)
	}
	if f.prequeueOpensAt != nil {
		ev.PrequeueOpensAt = f.prequeueOpensAt
	}
	if f.Challenge != nil {
		ev.Challenge = queue.Challenge(*f.Challenge)
	}
	set(&ev.PowBits, f.PowBits)
}

func (s *Server) createEvent(c *gin.Context) {
	var f eventFields
	if err := decode(c, &f); err != nil {
		s.fail(c, err)
		return
	}
	if err := f.times(); err != nil {
		s.fail(c, err)
		return
	}
	for name, missing := range map[string]bool{
		"id": f.ID == nil, "seats": f.Seats == nil, "capacity": f.Capacity == nil, "admit_batch": f.AdmitBatch == nil,
		"admit_interval_ms": f.AdmitIntervalMS == nil, "active_ttl_s": f.ActiveTTLS == nil, "policy": f.Policy == nil,
	} {
		if missing {
			s.fail(c, badRequest("field %s is required", name))
			return
		}
	}
	ev := queue.Event{ID: *f.ID, Seats: *f.Seats, PriorityShare: queue.DefaultPriorityShare}
	set(&ev.Name, f.Name)
	ev.OpensAt = f.opensAt
	f.apply(&ev)
	ev, err := s.Catalog.Create(c.Request.Context(), ev)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, ev)
}

func (s *Server) patchEvent(c *gin.Context) {
	var f eventFields
	if err := decode(c, &f); err != nil {
		s.fail(c, err)
		return
	}
	if f.ID != nil || f.Name != nil || f.Seats != nil || f.OpensAt != nil {
		s.fail(c, badRequest("only capacity, admit_batch, admit_interval_ms, active_ttl_s, policy, max_tps, priority_share, "+
			"closes_at, queue_mode, prequeue_opens_at, challenge and pow_bits can change"))
		return
	}
	if err := f.times(); err != nil {
		s.fail(c, err)
		return
	}
	// A value no event could take is a 400 even for an unknown event (400
	// outranks 404): check the change on the most permissive valid event,
	// one that opens as early as the change allows.
	probe := queue.Event{ID: "probe", Seats: 1, Capacity: 1, AdmitBatch: 1, AdmitIntervalMS: 50, ActiveTTLS: 1,
		Policy: queue.PolicyCapacity, MaxTPS: 1, OpensAt: &time.Time{}, QueueMode: queue.ModeFIFO,
		Challenge: queue.ChallengeNone, PowBits: queue.MinPowBits}
	if f.prequeueOpensAt != nil {
		probe.OpensAt = f.prequeueOpensAt
	}
	if f.PowBits != nil {
		probe.Challenge = queue.ChallengePow // pow_bits alone is checked as well
	}
	f.apply(&probe)
	if err := probe.Validate(s.Engine.Now()); err != nil {
		s.fail(c, err)
		return
	}
	s.update(c, f.apply)
}

func (s *Server) setPaused(paused bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		s.update(c, func(ev *queue.Event) { ev.Paused = paused })
	}
}

func (s *Server) update(c *gin.Context, change func(*queue.Event)) {
	ev, err := s.Catalog.Update(c.Request.Context(), c.Param("event"), change)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, ev)
}

func (s *Server) reportLoad(c *gin.Context) {
	var req struct {
		TPS *float64 `json:"tps"`
	}
	if err := decode(c, &req); err != nil {
		s.fail(c, err)
		return
	}
	if req.TPS == nil || *req.TPS < 0 || *req.TPS > 1e9 {
		s.fail(c, badRequest("tps must be a number from 0 to 1e9"))
		return
	}
	if _, err := s.Engine.Event(c.Request.Context(), c.Param("event")); err != nil {
		s.fail(c, err)
		return
	}
	if err := s.Engine.ReportLoad(c.Request.Context(), c.Param("event"), *req.TPS); err != nil {
		s.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// entryJSON is a queue entry as join and status answer it.
type entryJSON struct {
	Token    string         `json:"token,omitempty"`
	UserID   string         `json:"user_id,omitempty"`
	UserType queue.UserType `json:"user_type,omitempty"`
	Status   queue.Status   `json:"status"`
	// Seq is the attempt's arrival number in the event (join order).
	Seq           int64      `json:"seq,omitempty"`
	Position      int64      `json:"position,omitempty"`
	Waiting       int64      `json:"waiting"`
	ETASeconds    *int64     `json:"eta_s,omitempty"`
	AdmittedTotal int64      `json:"admitted_total"`
	Pass          string     `json:"pass,omitempty"`
	ExpiresAt     *time.Time `json:"expires_at,omitempty"`
	// AdmittedAt and AdmissionNo (admission order) are set while ACTIVE.
	AdmittedAt  *time.Time `json:"admitted_at,omitempty"`
	AdmissionNo int64      `json:"admission_no,omitempty"`
	// Lane is "priority" for a FAST TRACK attempt, absent for the normal lane.
	Lane queue.Lane `json:"lane,omitempty"`
}

// entryBody renders en; the pass is signed fresh for an ACTIVE entry.
func (s *Server) entryBody(eventID string, en queue.Entry, withIdentity bool) (entryJSON, error) {
	b := entryJSON{Status: en.Status, Seq: en.Seq, Waiting: en.Waiting, AdmittedTotal: en.AdmittedTotal, Lane: en.Lane}
	if withIdentity {
		b.Token, b.UserID, b.UserType = en.Token, en.UserID, queue.TypeOf(en.UserID)
	}
	switch en.Status {
	case queue.StatusWaiting:
		eta := int64(en.ETA / time.Second)
		b.Position, b.ETASeconds = en.Position, &eta
	case queue.StatusActive:
		pass, err := s.Signer.IssuePass(eventID, en.UserID, en.Token, en.AdmittedAt, en.ExpiresAt)
		if err != nil {
			// The window ended between the lookup and now.
			b.Status = queue.StatusExpired
			return b, nil
		}
		b.Pass, b.ExpiresAt, b.AdmittedAt, b.AdmissionNo = pass, &en.ExpiresAt, &en.AdmittedAt, en.AdmissionNo
	}
	return b, nil
}

func (s *Server) join(c *gin.Context) {
	var req joinRequest
	bodyErr := decodeJoin(c, &req)
	virtual := req.UserType != nil && *req.UserType == string(queue.UserVirtual)
	var (
		userID string
		opts   queue.JoinOptions
	)
	switch {
	case c.GetHeader(headerSimulator) != "" || (virtual && c.GetHeader("Authorization") == ""):
		if err := keyCheck(c.GetHeader(headerSimulator), s.Keys.SimulatorKey(), "simulator"); err != nil {
			// A VIRTUAL join without the right key is forbidden, never merely unauthenticated.
			s.fail(c, queue.Errorf(queue.CodeForbidden, "a VIRTUAL join needs the right simulator key"))
			return
		}
		userID = queue.VirtualPrefix
	default:
		sess, sent, err := s.session(c)
		if !sent {
			err = queue.Errorf(queue.CodeUnauthenticated, "an ACTUAL join needs a bearer access token")
		}
		if err != nil {
			s.fail(c, err)
			return
		}
		if virtual {
			s.fail(c, queue.Errorf(queue.CodeForbidden, "a VIRTUAL join needs the simulator key"))
			return
		}
		userID = sess.UserID
		opts.Device = s.device(c, sess)
	}
	if bodyErr != nil {
		s.fail(c, bodyErr)
		return
	}
	switch {
	case req.UserType == nil || (*req.UserType != string(queue.UserActual) && !virtual):
		s.fail(c, badRequest("user_type must be ACTUAL or VIRTUAL"))
		return
	case userID == queue.VirtualPrefix && !virtual:
		s.fail(c, queue.Errorf(queue.CodeForbidden, "the simulator key joins VIRTUAL users only"))
		return
	case req.BotID != nil && !virtual:
		s.fail(c, badRequest("bot_id is for VIRTUAL joins only"))
		return
	case req.BotID != nil && !queue.ValidBotID(*req.BotID):
		s.fail(c, badRequest("bot_id must be 1-64 of [A-Za-z0-9_.-]"))
		return
	case req.Priority != nil && *req.Priority && !virtual:
		s.fail(c, queue.Errorf(queue.CodeForbidden, "priority is for the simulator's VIRTUAL users; people redeem a priority_code"))
		return
	case req.PriorityCode != nil && !queue.ValidPriorityCode(*req.PriorityCode):
		s.fail(c, badRequest("priority_code must be 1-64 of [A-Za-z0-9_.-]"))
		return
	}
	if req.PriorityCode != nil {
		opts.PriorityCode = *req.PriorityCode
	}
	opts.Priority = req.Priority != nil && *req.Priority
	proven, err := s.proveWork(c, virtual, req.Challenge, req.Solution)
	if err != nil {
		s.fail(c, err)
		return
	}
	opts.Proven = proven
	if virtual {
		if req.BotID != nil {
			userID += *req.BotID
		} else {
			userID += uuid.NewString()
		}
	}
	en, created, err := s.Engine.JoinWith(c.Request.Context(), c.Param("event"), userID, opts)
	if err != nil {
		s.fail(c, err)
		return
	}
	b, err := s.entryBody(c.Param("event"), en, true)
	if err != nil {
		s.fail(c, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	writeEntry(c, code, &b)
}

func (s *Server) status(c *gin.Context) {
	en, err := s.Engine.Status(c.Request.Context(), c.Param("event"), c.Param("token"))
	if err != nil {
		s.fail(c, err)
		return
	}
	b, err := s.entryBody(c.Param("event"), en, false)
	if err != nil {
		s.fail(c, err)
		return
	}
	writeEntry(c, http.StatusOK, &b)
}

func (s *Server) leave(c *gin.Context) {
	actor, err := s.actor(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	was, err := s.Engine.Leave(c.Request.Context(), c.Param("event"), c.Param("token"), actor)
	if err != nil {
		s.fail(c, err)
		return
	}
	// The state the token was in when it left (ACTIVE: it was admitted first).
	c.Header("X-Queue-Status", string(was))
	c.Status(http.StatusNoContent)
}

func (s *Server) verify(c *gin.Context) {
	if err := s.service(c); err != nil {
		s.fail(c, err)
		return
	}
	var req struct {
		Token  *string `json:"token"`
		UserID *string `json:"user_id"`
	}
	if err := decode(c, &req); err != nil {
		s.fail(c, err)
		return
	}
	if req.Token == nil || *req.Token == "" || req.UserID == nil || *req.UserID == "" {
		s.fail(c, badRequest("token and user_id are required"))
		return
	}
	en, err := s.Engine.Verify(c.Request.Context(), c.Param("event"), *req.Token, queue.Actor{UserID: *req.UserID})
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": en.Status, "expires_at": en.ExpiresAt})
}

func (s *Server) seats(c *gin.Context) {
	tok := c.GetHeader(headerToken)
	if tok == "" {
		s.fail(c, queue.Errorf(queue.CodeUnauthenticated, "the seat map needs an X-Queue-Token header with an active token"))
		return
	}
	ev, err := s.Engine.Event(c.Request.Context(), c.Param("event"))
	if err != nil {
		s.fail(c, err)
		return
	}
	section := c.Query("section")
	if ev.Seats <= queue.MaxSeatList && section == "" {
		m, err := s.seatMaps.Get(c.Request.Context(), ev, tok)
		if err != nil {
			s.fail(c, err)
			return
		}
		c.Data(http.StatusOK, "application/json; charset=utf-8", m.ListJSON())
		return
	}
	s.seatSections(c, ev, tok, section)
}

// seatSections answers the map of an event over MaxSeatList seats by
// section: the overview, or with ?section= one section's seats.
func (s *Server) seatSections(c *gin.Context, ev queue.Event, tok, section string) {
	k := -1
	if section != "" {
		var ok bool
		if k, ok = queue.SectionIndex(ev.Seats, section); !ok {
			s.fail(c, queue.Errorf(queue.CodeSeatNotFound, "no section %q in the seat map of event %q", section, ev.ID))
			return
		}
	}
	m, err := s.seatMaps.Get(c.Request.Context(), ev, tok)
	if err != nil {
		s.fail(c, err)
		return
	}
	if k < 0 {
		c.JSON(http.StatusOK, gin.H{"sections": m.Sections()})
		return
	}
	first, n := m.SectionSpan(k)
	b := append(make([]byte, 0, 64+n*32), `{"section":`...)
	b = strconv.AppendQuote(b, section)
	b = append(b, `,"seats":[`...)
	for i := first; i < first+n; i++ {
		if i > first {
			b = append(b, ',')
		}
		b = queue.AppendSeatJSON(b, queue.SeatID(ev.Seats, i), m.Taken(i))
	}
	c.Data(http.StatusOK, "application/json; charset=utf-8", append(b, "]}"...))
}

func (s *Server) order(c *gin.Context) {
	actor, err := s.actor(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	var req struct {
		Token *string `json:"token"`
		Seat  *string `json:"seat"`
	}
	if err := decode(c, &req); err != nil {
		s.fail(c, err)
		return
	}
	if req.Token == nil || *req.Token == "" || req.Seat == nil || *req.Seat == "" {
		s.fail(c, badRequest("token and seat are required"))
		return
	}
	ev, err := s.Engine.Event(c.Request.Context(), c.Param("event"))
	if err != nil {
		s.fail(c, err)
		return
	}
	o, err := s.Engine.Order(c.Request.Context(), ev, *req.Token, *req.Seat, actor)
	if err == nil || queue.ErrorCode(err) == queue.CodeSeatTaken {
		// The seat is taken now: no reader of this replica is shown it free.
		s.seatMaps.Forget(ev.ID)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, o)
}
