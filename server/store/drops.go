package store

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/server/queue"
)

// dropModels are the tables of practice drops.
var dropModels = []any{&DropRow{}, &DropResultRow{}, &CrowdChunkRow{}}

var _ drop.Store = (*Store)(nil)

// DropRow is a row of the drops table: one practice drop and, once it is
// finished, its final figures (NULL or zero before).
type DropRow struct {
	ID       string     `gorm:"column:id;primaryKey"`
	EventID  string     `gorm:"column:event_id;not null;uniqueIndex:ux_drops_event"`
	Scenario string     `gorm:"column:scenario;not null"`
	Level    drop.Level `gorm:"column:level;not null"`
	Crowd    int        `gorm:"column:crowd;not null"`
	Seats    int        `gorm:"column:seats;not null"`
	OpensAt  time.Time  `gorm:"column:opens_at;not null;index:idx_drops_open,priority:2"`
	ClosesAt time.Time  `gorm:"column:closes_at;not null"`
	Schedule string     `gorm:"column:schedule;not null;default:''"`
	// FinishedAt is NULL while the drop is not finished.
	FinishedAt   *time.Time `gorm:"column:finished_at;index:idx_drops_open,priority:1"`
	SoldOut      bool       `gorm:"column:sold_out;not null;default:false"`
	Sold         int64      `gorm:"column:sold;not null;default:0"`
	PeopleJoined int64      `gorm:"column:people_joined;not null;default:0"`
	Joined       int64      `gorm:"column:joined;not null;default:0"`
	CrowdJoined  int64      `gorm:"column:crowd_joined;not null;default:0"`
	CrowdSold    int64      `gorm:"column:crowd_sold;not null;default:0"`
	CrowdP50MS   int64      `gorm:"column:crowd_p50_ms;not null;default:0"`
	CrowdP90MS   int64      `gorm:"column:crowd_p90_ms;not null;default:0"`
	CrowdP99MS   int64      `gorm:"column:crowd_p99_ms;not null;default:0"`
	// CrowdSteps is the crowd's time per order step (JSON of
	// []drop.StepQuantiles), '' for a scenario without steps.
	CrowdSteps string `gorm:"column:crowd_steps;not null;default:''"`
	// Held is true while the drop's event is kept (in Redis and SQL).
	Held      bool      `gorm:"column:held;not null;default:true"`
	CreatedAt time.Time `gorm:"column:created_at;not null"`
	// Owner is a solo race's person ('' for a public drop), Client the
	// address it was started from.
	Owner  string `gorm:"column:owner;not null;default:''"`
	Client string `gorm:"column:client;not null;default:''"`
	// Prefix starts the drop's virtual users' ids; '' for a drop stored
	// before it was kept (drop.Drop.VirtualPrefix).
	Prefix string `gorm:"column:crowd_prefix;not null;default:''"`
}

// TableName implements gorm's schema.Tabler.
func (DropRow) TableName() string { return "drops" }

func dropRow(d drop.Drop) DropRow {
	r := DropRow{ID: d.ID, EventID: d.Event, Scenario: d.Scenario, Level: d.Level, Crowd: d.Crowd, Seats: d.Seats,
		OpensAt: utc(d.OpensAt), ClosesAt: utc(d.ClosesAt), Schedule: d.Schedule, Held: true, CreatedAt: utc(d.CreatedAt),
		Owner: d.Owner, Client: d.Client, Prefix: d.Prefix}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now()
	}
	return r
}

// Drop returns the row as a drop.Drop, times in UTC.
func (r DropRow) Drop() drop.Drop {
	d := drop.Drop{ID: r.ID, Event: r.EventID, Scenario: r.Scenario, Level: r.Level, Crowd: r.Crowd, Seats: r.Seats,
		OpensAt: r.OpensAt.UTC(), ClosesAt: r.ClosesAt.UTC(), Schedule: r.Schedule, CreatedAt: r.CreatedAt.UTC(),
		Held: r.Held, Owner: r.Owner, Client: r.Client, Prefix: r.Prefix}
	if r.FinishedAt != nil {
		d.Final = &drop.Final{FinishedAt: r.FinishedAt.UTC(), SoldOut: r.SoldOut, Sold: r.Sold,
			PeopleJoined: r.PeopleJoined, Joined: r.Joined, CrowdJoined: r.CrowdJoined, CrowdSold: r.CrowdSold,
			CrowdP50: time.Duration(r.CrowdP50MS) * time.Millisecond,
			CrowdP90: time.Duration(r.CrowdP90MS) * time.Millisecond,
			CrowdP99: time.Duration(r.CrowdP99MS) * time.Millisecond}
		if r.CrowdSteps != "" {
			// Written by FinishDrop from the same type: a row that fails
			// to parse shows no step times rather than no drop.
			_ = json.Unmarshal([]byte(r.CrowdSteps), &d.Final.CrowdSteps)
		}
	}
	return d
}

// CreateDrop stores a new drop; the unique id (and event) decides between
// concurrent creates: the others get CodeEventExists.
func (s *Store) CreateDrop(ctx context.Context, d drop.Drop) error {
	row := dropRow(d)
	err := s.db.WithContext(ctx).Create(&row).Error
	switch {
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return queue.Errorf(queue.CodeEventExists, "drop %q already exists", d.ID)
	case err != nil:
		return unavailable("create drop "+d.ID, err)
	}
	return nil
}

// claimLockKey serialises ClaimDrop across replicas on PostgreSQL (SQLite
// transactions begin IMMEDIATE: one writer at a time already).
const claimLockKey = 0x736f6c6f // "solo"

// ClaimDrop stores d if fits, called with every unfinished drop under a lock
// that every ClaimDrop of every replica takes, accepts them: counting and
// storing are one step, so limits checked by fits hold under any
// concurrency. fits' error is returned as it is.
func (s *Store) ClaimDrop(ctx context.Context, d drop.Drop, fits func(open []drop.Drop) error) error {
	var refused error
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if s.dialect == DialectPostgres {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", claimLockKey).Error; err != nil {
				return err
			}
		}
		var rows []DropRow
		if err := tx.Where("finished_at IS NULL").Order("opens_at").Order("id").Find(&rows).Error; err != nil {
			return err
		}
		open := make([]drop.Drop, len(rows))
		for i, r := range rows {
			open[i] = r.Drop()
		}
		if refused = fits(open); refused != nil {
			return refused
		}
		row := dropRow(d)
		return tx.Create(&row).Error
	})
	switch {
	case refused != nil:
		return refused
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return queue.Errorf(queue.CodeEventExists, "drop %q already exists", d.ID)
	case err != nil:
		return unavailable("claim drop "+d.ID, err)
	}
	return nil
}

// Drop returns one drop, or CodeDropNotFound.
func (s *Store) Drop(ctx context.Context, id string) (drop.Drop, error) {
	var rows []DropRow
	if err := s.db.WithContext(ctx).Where("id = ?", id).Limit(1).Find(&rows).Error; err != nil {
		return drop.Drop{}, unavailable("get drop "+id, err)
	}
	if len(rows) == 0 {
		return drop.Drop{}, queue.Errorf(queue.CodeDropNotFound, "no drop %q", id)
	}
	return rows[0].Drop(), nil
}

func (s *Store) drops(ctx context.Context, op string, q func(*gorm.DB) *gorm.DB) ([]drop.Drop, error) {
	var rows []DropRow
	if err := q(s.db.WithContext(ctx)).Find(&rows).Error; err != nil {
		return nil, unavailable(op, err)
	}
	out := make([]drop.Drop, len(rows))
	for i, r := range rows {
		out[i] = r.Drop()
	}
	return out, nil
}

// OpenDrops lists the drops not finished, soonest opening first.
func (s *Store) OpenDrops(ctx context.Context) ([]drop.Drop, error) {
	return s.drops(ctx, "list open drops", func(db *gorm.DB) *gorm.DB {
		return db.Where("finished_at IS NULL").Order("opens_at").Order("id")
	})
}

// FinishedDrops lists up to limit finished public drops, latest first.
func (s *Store) FinishedDrops(ctx context.Context, limit int) ([]drop.Drop, error) {
	return s.drops(ctx, "list finished drops", func(db *gorm.DB) *gorm.DB {
		return db.Where("finished_at IS NOT NULL AND owner = ''").Order("finished_at DESC").Order("id").Limit(limit)
	})
}

// DeleteDrop deletes a drop and its results.
func (s *Store) DeleteDrop(ctx context.Context, id string) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("drop_id = ?", id).Delete(&DropResultRow{}).Error; err != nil {
			return err
		}
		return tx.Where("id = ?", id).Delete(&DropRow{}).Error
	})
	if err != nil {
		return unavailable("delete drop "+id, err)
	}
	return nil
}

// StaleDrops lists the finished drops whose event is still held, finished
// before t.
func (s *Store) StaleDrops(ctx context.Context, t time.Time) ([]drop.Drop, error) {
	return s.drops(ctx, "list stale drops", func(db *gorm.DB) *gorm.DB {
		return db.Where("held AND finished_at IS NOT NULL AND finished_at < ?", utc(t)).Order("finished_at").Order("id")
	})
}

// FinishDrop records a drop's end. Only the first call changes the row, so
// replicas finishing the drop at once agree on its figures.
func (s *Store) FinishDrop(ctx context.Context, id string, f drop.Final) error {
	var steps string
	if f.CrowdSteps != nil {
		b, err := json.Marshal(f.CrowdSteps)
		if err != nil {
			return err
		}
		steps = string(b)
	}
	res := s.db.WithContext(ctx).Model(&DropRow{}).Where("id = ? AND finished_at IS NULL", id).Updates(map[string]any{
		"finished_at": utc(f.FinishedAt), "sold_out": f.SoldOut, "sold": f.Sold, "people_joined": f.PeopleJoined,
		"joined": f.Joined, "crowd_joined": f.CrowdJoined, "crowd_sold": f.CrowdSold,
		"crowd_p50_ms": f.CrowdP50.Milliseconds(), "crowd_p90_ms": f.CrowdP90.Milliseconds(),
		"crowd_p99_ms": f.CrowdP99.Milliseconds(), "crowd_steps": steps,
	})
	if res.Error != nil {
		return unavailable("finish drop "+id, res.Error)
	}
	if res.RowsAffected == 0 {
		_, err := s.Drop(ctx, id) // unknown, or finished already (fine)
		return err
	}
	return nil
}

// ForgetDrop records that a drop's event is no longer held.
func (s *Store) ForgetDrop(ctx context.Context, id string) error {
	if err := s.db.WithContext(ctx).Model(&DropRow{}).Where("id = ?", id).Update("held", false).Error; err != nil {
		return unavailable("forget drop "+id, err)
	}
	return nil
}

// DropResultRow is a row of the drop_results table: one person's race in a
// drop. Figures that do not apply are NULL.
type DropResultRow struct {
	DropID      string       `gorm:"column:drop_id;primaryKey"`
	UserID      string       `gorm:"column:user_id;primaryKey;index:idx_drop_results_user,priority:1"`
	Nickname    string       `gorm:"column:nickname;not null"`
	Seq         int64        `gorm:"column:seq;not null"`
	Attempt     int64        `gorm:"column:attempt;not null"`
	AttemptAt   time.Time    `gorm:"column:attempt_at;not null"`
	Position    int64        `gorm:"column:position;not null"`
	JoinedAt    time.Time    `gorm:"column:joined_at;not null"`
	ReactionMS  int64        `gorm:"column:reaction_ms;not null"`
	AdmittedAt  *time.Time   `gorm:"column:admitted_at"`
	WaitMS      *int64       `gorm:"column:wait_ms"`
	Outcome     drop.Outcome `gorm:"column:outcome;not null"`
	Seat        *string      `gorm:"column:seat"`
	SeatRow     *int         `gorm:"column:seat_row"`
	BoughtMS    *int64       `gorm:"column:bought_ms"`
	FalseStarts int          `gorm:"column:false_starts;not null;default:0"`
	Scenario    string       `gorm:"column:scenario;not null;index:idx_drop_results_board,priority:1"`
	OpensAt     time.Time    `gorm:"column:opens_at;not null;index:idx_drop_results_board,priority:2;index:idx_drop_results_at;index:idx_drop_results_user,priority:2"`
	Crowd       int          `gorm:"column:crowd;not null;default:0"`
	// Private marks a solo race's result.
	Private bool `gorm:"column:private;not null;default:false"`
}

// TableName implements gorm's schema.Tabler.
func (DropResultRow) TableName() string { return "drop_results" }

func msPtr(d *time.Duration) *int64 {
	if d == nil {
		return nil
	}
	v := d.Milliseconds()
	return &v
}

func durPtr(ms *int64) *time.Duration {
	if ms == nil {
		return nil
	}
	d := time.Duration(*ms) * time.Millisecond
	return &d
}

func resultRow(r drop.Result) DropResultRow {
	row := DropResultRow{DropID: r.DropID, UserID: r.UserID, Nickname: r.Nickname, Seq: r.Seq, Attempt: r.Attempt,
		AttemptAt: utc(r.AttemptAt), Position: r.Position, JoinedAt: utc(r.JoinedAt), ReactionMS: r.Reaction.Milliseconds(), AdmittedAt: utcPtr(r.AdmittedAt),
		WaitMS: msPtr(r.Wait), Outcome: r.Outcome, BoughtMS: msPtr(r.Bought), FalseStarts: r.FalseStarts,
		Scenario: r.Scenario, OpensAt: utc(r.OpensAt), Crowd: r.Crowd, Private: r.Private}
	if r.Seat != "" {
		seat, seatRow := r.Seat, r.SeatRow
		row.Seat, row.SeatRow = &seat, &seatRow
	}
	return row
}

// Result returns the row as a drop.Result, times in UTC.
func (r DropResultRow) Result() drop.Result {
	res := drop.Result{DropID: r.DropID, UserID: r.UserID, Nickname: r.Nickname, Seq: r.Seq, Attempt: r.Attempt,
		AttemptAt: r.AttemptAt.UTC(), Position: r.Position, JoinedAt: r.JoinedAt.UTC(), Reaction: time.Duration(r.ReactionMS) * time.Millisecond,
		AdmittedAt: utcPtr(r.AdmittedAt), Wait: durPtr(r.WaitMS), Outcome: r.Outcome, Bought: durPtr(r.BoughtMS),
		FalseStarts: r.FalseStarts, Scenario: r.Scenario, OpensAt: r.OpensAt.UTC(), Crowd: r.Crowd,
		Private: r.Private}
	if r.Seat != nil {
		res.Seat = *r.Seat
	}
	if r.SeatRow != nil {
		res.SeatRow = *r.SeatRow
	}
	return res
}

// SaveResults creates or replaces people's results, in one statement per
// insertBatch rows.
func (s *Store) SaveResults(ctx context.Context, rs []drop.Result) error {
	if len(rs) == 0 {
		return nil
	}
	rows := make([]DropResultRow, len(rs))
	for i, r := range rs {
		rows[i] = resultRow(r)
	}
	err := s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "drop_id"}, {Name: "user_id"}},
		UpdateAll: true,
	}).CreateInBatches(&rows, insertBatch/20).Error
	if err != nil {
		return unavailable("save drop results", err)
	}
	return nil
}

func results(rows []DropResultRow) []drop.Result {
	out := make([]drop.Result, len(rows))
	for i, r := range rows {
		out[i] = r.Result()
	}
	return out
}

// Results lists a drop's results by place in line (position at join, then
// arrival).
func (s *Store) Results(ctx context.Context, dropID string) ([]drop.Result, error) {
	var rows []DropResultRow
	err := s.db.WithContext(ctx).Where("drop_id = ?", dropID).Order("position").Order("seq").Order("user_id").Find(&rows).Error
	if err != nil {
		return nil, unavailable("list drop results", err)
	}
	return results(rows), nil
}

// Result returns one person's result, or CodeResultNotFound.
func (s *Store) Result(ctx context.Context, dropID, userID string) (drop.Result, error) {
	var rows []DropResultRow
	err := s.db.WithContext(ctx).Where("drop_id = ? AND user_id = ?", dropID, userID).Limit(1).Find(&rows).Error
	if err != nil {
		return drop.Result{}, unavailable("get drop result", err)
	}
	if len(rows) == 0 {
		return drop.Result{}, queue.Errorf(queue.CodeResultNotFound, "you did not race drop %q", dropID)
	}
	return rows[0].Result(), nil
}

// leaderboardPage is how many rows Leaderboard reads at a time while it
// keeps each person's best.
const leaderboardPage = 500

// Leaderboard lists up to limit results of public drops opened from since, of one
// scenario unless it is "", each person's best once: a seat first, then its
// row, then the time from the opening to the purchase, then the reaction;
// earlier drops win ties.
func (s *Store) Leaderboard(ctx context.Context, since time.Time, scenario string, limit int) ([]drop.Result, error) {
	var out []drop.Result
	seen := map[string]bool{}
	for offset := 0; len(out) < limit; offset += leaderboardPage {
		q := s.db.WithContext(ctx).Where("opens_at >= ? AND NOT private", utc(since))
		if scenario != "" {
			q = q.Where("scenario = ?", scenario)
		}
		var rows []DropResultRow
		err := q.Order("CASE WHEN seat IS NULL THEN 1 ELSE 0 END").Order("seat_row").Order("bought_ms").
			Order("reaction_ms").Order("opens_at").Order("drop_id").Order("user_id").
			Offset(offset).Limit(leaderboardPage).Find(&rows).Error
		if err != nil {
			return nil, unavailable("drop leaderboard", err)
		}
		for _, r := range rows {
			if !seen[r.UserID] && len(out) < limit {
				seen[r.UserID] = true
				out = append(out, r.Result())
			}
		}
		if len(rows) < leaderboardPage {
			break
		}
	}
	return out, nil
}

// SoloHistory lists up to limit of a person's results in solo races,
// latest opening first.
func (s *Store) SoloHistory(ctx context.Context, userID string, limit int) ([]drop.Result, error) {
	var rows []DropResultRow
	err := s.db.WithContext(ctx).Where("user_id = ? AND private", userID).Order("opens_at DESC").Order("drop_id").
		Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, unavailable("solo race history", err)
	}
	return results(rows), nil
}

// SoloBoard lists up to limit results in solo races of a scenario, fastest
// reaction first; earlier races win ties.
func (s *Store) SoloBoard(ctx context.Context, scenario string, limit int) ([]drop.Result, error) {
	var rows []DropResultRow
	err := s.db.WithContext(ctx).Where("scenario = ? AND private", scenario).Order("reaction_ms").Order("opens_at").
		Order("drop_id").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, unavailable("solo race leaderboard", err)
	}
	return results(rows), nil
}

// CrowdChunkRow is a row of the crowd_chunks table: one crowd join of a
// drop's event (queue.CrowdChunk), the only trace SQL has of a virtual user
// that joined and was not admitted yet.
type CrowdChunkRow struct {
	EventID  string `gorm:"column:event_id;primaryKey"`
	Cursor   int64  `gorm:"column:first_index;primaryKey;autoIncrement:false"`
	Prefix   string `gorm:"column:prefix;not null"`
	N        int    `gorm:"column:n;not null"`
	FirstSeq int64  `gorm:"column:first_seq;not null"`
}

// TableName implements gorm's schema.Tabler.
func (CrowdChunkRow) TableName() string { return "crowd_chunks" }

// SaveCrowdChunks stores crowd joins; one stored already is left as it is.
func (s *Store) SaveCrowdChunks(ctx context.Context, cs []queue.CrowdChunk) error {
	if len(cs) == 0 {
		return nil
	}
	rows := make([]CrowdChunkRow, len(cs))
	for i, c := range cs {
		rows[i] = CrowdChunkRow{EventID: c.EventID, Cursor: c.Cursor, Prefix: c.Prefix, N: c.N, FirstSeq: c.FirstSeq}
	}
	err := s.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).CreateInBatches(&rows, insertBatch/5).Error
	if err != nil {
		return unavailable("save crowd chunks", err)
	}
	return nil
}

// CrowdChunks lists an event's crowd joins by cursor.
func (s *Store) CrowdChunks(ctx context.Context, eventID string) ([]queue.CrowdChunk, error) {
	var rows []CrowdChunkRow
	if err := s.db.WithContext(ctx).Where("event_id = ?", eventID).Order("first_index").Find(&rows).Error; err != nil {
		return nil, unavailable("list crowd chunks", err)
	}
	out := make([]queue.CrowdChunk, len(rows))
	for i, r := range rows {
		out[i] = queue.CrowdChunk{EventID: r.EventID, Prefix: r.Prefix, Cursor: r.Cursor, N: r.N, FirstSeq: r.FirstSeq}
	}
	return out, nil
}

// CrowdFloor is how far SQL knows the crowd of eventID (its virtual users
// named prefix+index) joined: past its stored chunks, and past every
// virtual user the audit trail has. A player resumes at least there.
func (s *Store) CrowdFloor(ctx context.Context, eventID, prefix string) (int64, error) {
	var floor int64
	err := s.db.WithContext(ctx).Model(&CrowdChunkRow{}).Where("event_id = ?", eventID).
		Select("COALESCE(MAX(first_index + n), 0)").Scan(&floor).Error
	if err != nil {
		return 0, unavailable("crowd floor", err)
	}
	// LIKE's wildcards in prefix only widen the match; CutPrefix decides.
	// The rows stream by: one scan of the event's entries and one of its
	// join runs, nothing sorted or held (a resumed drop's crowd may be a
	// million users).
	db := s.db.WithContext(ctx)
	for _, q := range []*gorm.DB{
		db.Model(&Entry{}).Where("event_id = ? AND user_id LIKE ?", eventID, prefix+"%").Select("user_id"),
		db.Model(&JoinRun{}).Where("event_id = ? AND users LIKE ?", eventID, "%"+prefix+"%").Select("users"),
	} {
		if err := scanUsers(q, func(u string) {
			rest, ok := strings.CutPrefix(u, prefix)
			if k, err := strconv.ParseInt(rest, 10, 64); ok && err == nil {
				floor = max(floor, k+1)
			}
		}); err != nil {
			return 0, unavailable("crowd floor", err)
		}
	}
	return floor, nil
}

// scanUsers calls fn with each user id of the rows of q, whose one column
// holds user ids, one per line.
func scanUsers(q *gorm.DB, fn func(user string)) error {
	rows, err := q.Rows()
	if err != nil {
		return err
	}
	defer rows.Close()
	var us string
	for rows.Next() {
		if err := rows.Scan(&us); err != nil {
			return err
		}
		for u := range strings.Lines(us) {
			fn(strings.TrimSuffix(u, "\n"))
		}
	}
	return rows.Err()
}
