package store

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/rushline/rushline/server/practice/record"
	"github.com/rushline/rushline/server/queue"
)

// PracticeResult is a row of the practice_results table: one finished
// practice race, written once when it ends. Figures that do not apply are NULL.
type PracticeResult struct {
	EventID            string    `gorm:"column:event_id;primaryKey"`
	UserID             string    `gorm:"column:user_id;not null;index:idx_practice_user_at,priority:1"`
	Nickname           string    `gorm:"column:nickname;not null"`
	Scenario           string    `gorm:"column:scenario;not null;index:idx_practice_board,priority:1"`
	At                 time.Time `gorm:"column:at;not null;index:idx_practice_user_at,priority:2"`
	FinishedAt         time.Time `gorm:"column:finished_at;not null"`
	Bots               int       `gorm:"column:bots;not null"`
	Seats              int       `gorm:"column:seats;not null"`
	Sold               int64     `gorm:"column:sold;not null"`
	Joined             bool      `gorm:"column:joined;not null"`
	ReactionMS         *int64    `gorm:"column:reaction_ms;index:idx_practice_board,priority:2"`
	JoinRank           *int64    `gorm:"column:join_rank"`
	PositionAtJoin     *int64    `gorm:"column:position_at_join"`
	BotsAhead          *int64    `gorm:"column:bots_ahead"`
	PeopleAhead        *int64    `gorm:"column:people_ahead"`
	Admitted           bool      `gorm:"column:admitted;not null"`
	WaitMS             *int64    `gorm:"column:wait_ms"`
	Seat               *string   `gorm:"column:seat"`
	Outcome            string    `gorm:"column:outcome;not null"`
	ReactionPercentile *int      `gorm:"column:reaction_percentile"`
}

// TableName implements gorm's schema.Tabler.
func (PracticeResult) TableName() string { return "practice_results" }

func practiceRow(r record.Record) PracticeResult {
	y := r.You
	return PracticeResult{
		EventID: r.EventID, UserID: r.UserID, Nickname: r.Nickname, Scenario: r.Scenario,
		At: utc(r.OpensAt), FinishedAt: utc(r.FinishedAt), Bots: r.Bots, Seats: r.Seats, Sold: r.Sold,
		Joined: y.Joined, ReactionMS: y.ReactionMS, JoinRank: y.JoinRank, PositionAtJoin: y.PositionAtJoin,
		BotsAhead: y.BotsAhead, PeopleAhead: y.PeopleAhead, Admitted: y.Admitted, WaitMS: y.WaitMS,
		Seat: y.Seat, Outcome: y.Outcome, ReactionPercentile: y.ReactionPercentile,
	}
}

// Record returns the row as a record.Record, times in UTC.
func (p PracticeResult) Record() record.Record {
	return record.Record{
		EventID: p.EventID, Scenario: p.Scenario, UserID: p.UserID, Nickname: p.Nickname,
		OpensAt: p.At.UTC(), FinishedAt: p.FinishedAt.UTC(), Bots: p.Bots, Seats: p.Seats, Sold: p.Sold,
		You: record.You{
			Joined: p.Joined, ReactionMS: p.ReactionMS, JoinRank: p.JoinRank, PositionAtJoin: p.PositionAtJoin,
			BotsAhead: p.BotsAhead, PeopleAhead: p.PeopleAhead, Admitted: p.Admitted, WaitMS: p.WaitMS,
			Seat: p.Seat, Outcome: p.Outcome, ReactionPercentile: p.ReactionPercentile,
		},
	}
}

// SavePracticeResult stores a finished race. Saving the same event again
// changes nothing: a race has one result.
func (s *Store) SavePracticeResult(ctx context.Context, r record.Record) error {
	row := practiceRow(r)
	if err := s.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
		return unavailable("save practice result "+r.EventID, err)
	}
	return nil
}

// PracticeResult returns the stored result of one race; CodeEventNotFound
// when there is none.
func (s *Store) PracticeResult(ctx context.Context, eventID string) (record.Record, error) {
	var row PracticeResult
	err := s.db.WithContext(ctx).Where("event_id = ?", eventID).Take(&row).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return record.Record{}, queue.Errorf(queue.CodeEventNotFound, "no practice race %q", eventID)
	case err != nil:
		return record.Record{}, unavailable("get practice result "+eventID, err)
	}
	return row.Record(), nil
}

// PracticeHistory returns up to limit of a user's races, newest first.
func (s *Store) PracticeHistory(ctx context.Context, userID string, limit int) ([]record.Record, error) {
	var rows []PracticeResult
	err := s.db.WithContext(ctx).Where("user_id = ?", userID).
		Order("at DESC").Order("event_id").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, unavailable("practice history", err)
	}
	return records(rows), nil
}

// PracticeLeaderboard returns up to limit races of a scenario in which the
// person joined, fastest reaction first (earlier races win ties).
func (s *Store) PracticeLeaderboard(ctx context.Context, scenario string, limit int) ([]record.Record, error) {
	var rows []PracticeResult
	err := s.db.WithContext(ctx).Where("scenario = ? AND joined AND reaction_ms IS NOT NULL", scenario).
		Order("reaction_ms").Order("at").Order("event_id").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, unavailable("practice leaderboard", err)
	}
	return records(rows), nil
}

func records(rows []PracticeResult) []record.Record {
	out := make([]record.Record, len(rows))
	for i, r := range rows {
		out[i] = r.Record()
	}
	return out
}
