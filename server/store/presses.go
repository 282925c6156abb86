package store

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/rushline/rushline/server/steps"
)

var _ steps.PressStore = (*Store)(nil)

// PressRow is a row of the press_drills table: one press of the drill that
// aims at an exact second of the server's clock.
type PressRow struct {
	ID     int64     `gorm:"column:id;primaryKey;autoIncrement"`
	UserID string    `gorm:"column:user_id;not null;index:idx_press_drills_user"`
	Target time.Time `gorm:"column:target_at;not null"`
	// OffsetMS is how far after the target the press came (negative:
	// before); AbsMS its size, which ranks the presses.
	OffsetMS  int64     `gorm:"column:offset_ms;not null"`
	AbsMS     int64     `gorm:"column:abs_ms;not null;index:idx_press_drills_abs"`
	CreatedAt time.Time `gorm:"column:created_at;not null"`
}

// TableName implements gorm's schema.Tabler.
func (PressRow) TableName() string { return "press_drills" }

// pressLockKey is the first key of the PostgreSQL advisory locks that make
// one person's press saves take turns (the second is the user id's hash).
const pressLockKey = 0x70726573 // "pres"

// SavePress stores one press and drops the person's oldest past
// steps.MaxPressesKept, in one transaction: the table holds at most that
// many presses a person, however often they press.
func (s *Store) SavePress(ctx context.Context, p steps.Press) error {
	off := p.Offset.Milliseconds()
	row := PressRow{UserID: p.UserID, Target: utc(p.Target), OffsetMS: off, AbsMS: max(off, -off), CreatedAt: utc(p.At)}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// One person's saves take turns (SQLite's writes always do), so
		// two at once cannot each keep the other's press past the cap.
		if s.dialect == DialectPostgres {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?, hashtext(?))", pressLockKey, p.UserID).Error; err != nil {
				return err
			}
		}
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		keep := tx.Model(&PressRow{}).Select("id").Where("user_id = ?", p.UserID).
			Order("id DESC").Limit(steps.MaxPressesKept)
		return tx.Where("user_id = ? AND id NOT IN (?)", p.UserID, keep).Delete(&PressRow{}).Error
	})
	if err != nil {
		return unavailable("save press", err)
	}
	return nil
}

// PressStanding counts the presses of people other than userID, and those
// of them further from their target than off.
func (s *Store) PressStanding(ctx context.Context, userID string, off time.Duration) (steps.PressStanding, error) {
	abs := off.Milliseconds()
	abs = max(abs, -abs)
	var st struct {
		Others int64
		Worse  int64
	}
	err := s.db.WithContext(ctx).Model(&PressRow{}).Where("user_id <> ?", userID).
		Select("COUNT(*) AS others, COALESCE(SUM(CASE WHEN abs_ms > ? THEN 1 ELSE 0 END), 0) AS worse", abs).Scan(&st).Error
	if err != nil {
		return steps.PressStanding{}, unavailable("press standing", err)
	}
	return steps.PressStanding{Others: st.Others, Worse: st.Worse}, nil
}
